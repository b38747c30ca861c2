/** The one model name the chat gateway answers to; upstream models are never named to clients. */
export const CHAT_ALIAS = "project-zero";
