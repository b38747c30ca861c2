import type { Tone } from "../content.js";

/** Words the offline writer's copy is built from; filled with the goal's own name and subject. */
export interface ProfileWords {
  name: string;
  subject: string;
  /** " in Lyon", or "". */
  inPlace: string;
}

type Line = (w: ProfileWords) => string;
type Item = readonly [title: string | Line, text: Line];

/**
 * The kind of thing a site is for, as far as the offline writer can tell,
 * and the honest generic copy that suits it. Copy states intentions and
 * invitations, never facts the goal did not give (no prices, hours, awards).
 */
export interface Profile {
  id: string;
  match: RegExp;
  tone: Tone;
  /** The page that presents what is offered. */
  offerPage: { slug: string; title: string; navLabel: string; heading: Line; intro: Line /** The button that leads there. */; more: string };
  /** Shown as cards when the goal names fewer than three offerings. */
  values: readonly Item[];
  /** The card text for one thing the goal says is offered. */
  offerText: (offering: string, w: ProfileWords, index: number) => string;
  audience: Line;
  purpose: Line;
  steps: { heading: string; items: readonly Item[] };
  faq: readonly Item[];
  cta: { label: string; page: "contact" | "offer"; heading: Line; text: Line };
}

export const PROFILES: readonly Profile[] = [
  {
    id: "food",
    offerText: (_o, w, i) =>
      [
        `Made at ${w.name}. Ask what is fresh today.`,
        "Made fresh for the counter, or ordered ahead for a gathering.",
        "Ask what is available today, or order ahead for an occasion.",
      ][i % 3]!,
    // Bounded by letters of any script, not \b: that is ASCII's, and there is none after the "\u00E9" of "caf\u00E9".
    match:
      /(?<![\p{L}\p{N}])(?:bakery|bakeries|boulangerie|p[a\u00E2]tisserie|caf[e\u00E9]|coffee|restaurant|bistro|brasserie|pizzeria|bar|pub|catering|caterer|deli|food|kitchen|brewery|tea ?room|ice cream|chocolat\p{L}*|cheese\p{L}*|bread|cakes?)(?![\p{L}\p{N}])/iu,
    tone: "warm",
    offerPage: {
      slug: "menu",
      more: "See the menu",
      title: "Our menu",
      navLabel: "Menu",
      heading: () => "What we make",
      intro: (w) => `Everything at ${w.name} is made to be enjoyed. Here is what you can come in for.`,
    },
    values: [
      ["Made with care", (w) => `${w.name} is about doing simple things well, with attention to every batch.`],
      ["Something for every day", () => "Stop by for an everyday treat or plan ahead for a special occasion."],
      ["Orders for occasions", () => "Celebrating something? Ask about ordering ahead and we will help you plan it."],
    ],
    audience: (w) => `Neighbours, regulars and visitors${w.inPlace} looking for good food made with care.`,
    purpose: (w) => `Show what ${w.name} makes, make visiting easy, and invite people to order ahead.`,
    steps: {
      heading: "Ordering ahead",
      items: [
        ["Tell us what you would like", () => "Get in touch with what you need, how many people it is for and when."],
        ["We confirm the details", () => "We reply to agree on what is possible and when it will be ready."],
        ["Collect and enjoy", () => "Pick up your order at the agreed time, freshly made."],
      ],
    },
    faq: [
      ["Can I order for a special occasion?", () => "Yes. Get in touch as early as you can with what you have in mind and we will tell you what we can do."],
      [
        "Do you cater for dietary needs?",
        () => "Ask us about ingredients and allergens before you order; we will always tell you honestly what is in our food.",
      ],
    ],
    cta: { label: "Plan your visit", page: "contact", heading: (w) => `Come and see us${w.inPlace}`, text: () => "Drop in, or get in touch to order ahead." },
  },
  {
    id: "shop",
    offerText: (o) => `Ask us about ${o}: what is in stock, and what we can order or put together for you.`,
    match:
      /\b(?:shop|store|boutique|florist\w*|flowers?|bookshop|bookstore|books|market|grocer\w*|gifts?|jewell?er\w*|jewell?ery|clothing|fashion|vintage|antiques?|furniture|e-?commerce|online store|nursery|garden cent(?:re|er))\b/i,
    tone: "warm",
    offerPage: {
      slug: "shop",
      more: "See what we have",
      title: "Shop",
      navLabel: "Shop",
      heading: () => "What you will find",
      intro: (w) => `A look at what ${w.name} has to offer. Come in, or ask us about anything you are looking for.`,
    },
    values: [
      ["Chosen with care", () => "Every item is picked because we would be happy to have it ourselves."],
      ["Personal advice", () => "Tell us what you are looking for and we will help you find it."],
      ["Made for giving", () => "Looking for a present? Ask us and we will help you choose."],
    ],
    audience: (w) => `Anyone${w.inPlace} looking for something special, for themselves or as a gift.`,
    purpose: (w) => `Show what ${w.name} offers, invite people in, and make it easy to ask for something specific.`,
    steps: {
      heading: "Ordering something special",
      items: [
        ["Tell us what you have in mind", () => "Describe what you are looking for, the occasion and when you need it."],
        ["We suggest and confirm", () => "We reply with what we can offer and agree the details with you."],
        ["Collect it", () => "Pick it up at the agreed time, ready to enjoy or to give."],
      ],
    },
    faq: [
      ["Can I order something that is not in the shop?", () => "Often, yes. Ask us and we will tell you honestly what we can find or make for you."],
      ["Do you help with gifts?", () => "Gladly. Tell us about the person and the occasion and we will suggest something."],
    ],
    cta: {
      label: "Visit us",
      page: "contact",
      heading: (w) => `Come and visit${w.inPlace}`,
      text: () => "Drop in, or get in touch to ask about anything you are looking for.",
    },
  },
  {
    id: "wellness",
    offerText: (o) => `Ask us about ${o}: who it suits, what to expect and how to join.`,
    match:
      /\b(?:yoga|pilates|meditation|mindfulness|therap\w+|massage|clinic|dentist|dental|physio\w*|osteopath\w*|gym|fitness|spa|wellness|wellbeing|well-being|nutrition\w*|counsell?ing|health)\b/i,
    tone: "calm",
    offerPage: {
      slug: "sessions",
      more: "See the sessions",
      title: "Sessions",
      navLabel: "Sessions",
      heading: () => "What we offer",
      intro: (w) => `Everything at ${w.name} is designed around the people who come to us. Find what suits you.`,
    },
    values: [
      ["At your own pace", () => "Every session meets you where you are, whether you are starting out or coming back."],
      ["Personal attention", () => "Small groups and one-to-one time, so your questions always get an answer."],
      ["A calm space", () => "A place to slow down, focus and look after yourself."],
    ],
    audience: (w) => `People${w.inPlace} who want to look after their body and mind, beginners and regulars alike.`,
    purpose: (w) => `Explain what ${w.name} offers, help people choose a first session and make booking easy.`,
    steps: {
      heading: "Your first visit",
      items: [
        ["Get in touch", () => "Tell us what you are looking for and ask anything you like."],
        ["Choose a session", () => "We help you pick the session that fits your needs and your week."],
        ["Come as you are", () => "Arrive a few minutes early; we take care of the rest."],
      ],
    },
    faq: [
      ["I am a complete beginner. Is that all right?", () => "Absolutely. Tell us when you get in touch and we will suggest the best place to start."],
      ["What should I bring?", () => "Comfortable clothes are enough. We will tell you if a particular session needs anything more."],
    ],
    cta: {
      label: "Book a session",
      page: "contact",
      heading: () => "Ready to start?",
      text: () => "Get in touch to book your first session or ask a question.",
    },
  },
  {
    id: "event",
    offerText: (_o) => `Part of the programme. Details are shared here as they are confirmed.`,
    match: /\b(?:wedding|conference|festival|meetup|meet-up|summit|party|concert|gala|fundraiser|hackathon|fair|exhibition|reunion|retreat|ceremony|event)\b/i,
    tone: "playful",
    offerPage: {
      slug: "programme",
      more: "See the programme",
      title: "Programme",
      navLabel: "Programme",
      heading: () => "What to expect",
      intro: (w) => `Here is what ${w.name} has in store.`,
    },
    values: [
      ["Good company", () => "The best part of any gathering is the people you meet there."],
      ["Something for everyone", () => "A mix of moments to take part in, listen, and simply enjoy."],
      ["Easy to join", () => "Everything you need to know is on this site, and we are a message away."],
    ],
    audience: () => "Guests and everyone curious about taking part.",
    purpose: (w) => `Tell guests what ${w.name} is, what will happen, and how to take part.`,
    steps: {
      heading: "How to take part",
      items: [
        ["Read the details", () => "Find out what is planned on the programme page."],
        ["Let us know you are coming", () => "Get in touch so we can plan for you."],
        ["Join us", () => "Arrive, say hello, and enjoy."],
      ],
    },
    faq: [
      ["Who can come?", (w) => `Everyone who is interested in ${w.subject}. If you are unsure, ask us.`],
      ["Where will I find the latest details?", () => "On this site. We keep it up to date as plans are confirmed."],
    ],
    cta: {
      label: "Let us know you are coming",
      page: "contact",
      heading: () => "We hope to see you there",
      text: () => "Get in touch to say you are coming or to ask anything.",
    },
  },
  {
    id: "community",
    offerText: (_o, w) => `One of the ways ${w.name} brings people together. Ask us how to take part.`,
    match:
      /\b(?:club|association|non-?profit|charity|community|volunteers?|church|parish|society|choir|team|group|collective|cooperative|co-op|union|league)\b/i,
    tone: "playful",
    offerPage: {
      slug: "get-involved",
      more: "See ways to get involved",
      title: "Get involved",
      navLabel: "Get involved",
      heading: () => "Ways to get involved",
      intro: (w) => `${w.name} is made by the people who take part. There is a place for you.`,
    },
    values: [
      ["Open to everyone", () => "New faces are always welcome, whatever your experience."],
      ["Run by its members", () => "Everything happens because people choose to give a little of their time."],
      ["Better together", () => "Shared goals, shared effort, and friends made along the way."],
    ],
    audience: (w) => `People${w.inPlace} who want to join in, help out or simply find out more.`,
    purpose: (w) => `Say what ${w.name} does, welcome newcomers and make joining easy.`,
    steps: {
      heading: "How to join",
      items: [
        ["Say hello", () => "Get in touch and tell us a little about yourself."],
        ["Come along", () => "Join us once to see whether it suits you, with no commitment."],
        ["Become part of it", () => "Stay as involved as you like."],
      ],
    },
    faq: [
      ["Do I need any experience?", () => "No. Everyone starts somewhere, and members are happy to show you the ropes."],
      ["How much time does it take?", () => "As much or as little as you can give. Talk to us and we will find what fits."],
    ],
    cta: { label: "Join us", page: "contact", heading: () => "Come and join us", text: () => "Get in touch and we will tell you how to take part." },
  },
  {
    id: "education",
    offerText: (o) => `Ask us about ${o}: what it covers and which level suits you.`,
    match: /\b(?:course|courses|school|tutor\w*|class|classes|lessons?|teach\w*|academy|training|coaching|coach|bootcamp|workshops?|mentor\w*|language)\b/i,
    tone: "calm",
    offerPage: {
      slug: "learning",
      more: "See what you can learn",
      title: "Learning",
      navLabel: "Learning",
      heading: () => "What you can learn",
      intro: (w) => `${w.name} helps people learn with confidence. Here is how.`,
    },
    values: [
      ["Learn by doing", () => "Practical lessons that build real skills step by step."],
      ["At the right level", () => "We start from what you know and move at a pace that works for you."],
      ["Support along the way", () => "Questions are welcome at every stage."],
    ],
    audience: () => "Learners of every level who want clear, patient teaching.",
    purpose: (w) => `Explain what ${w.name} teaches, who it suits and how to enrol.`,
    steps: {
      heading: "How it works",
      items: [
        ["Tell us your goals", () => "Get in touch with what you want to learn and where you are starting from."],
        ["Find the right fit", () => "We suggest the lessons or course that match your level."],
        ["Start learning", () => "Begin at a pace that suits you, with support whenever you need it."],
      ],
    },
    faq: [
      ["Which level should I start at?", () => "Tell us about your experience and we will recommend a starting point."],
      ["Can I try before committing?", () => "Ask us. We are happy to talk through what a first lesson looks like."],
    ],
    cta: { label: "Start learning", page: "contact", heading: () => "Ready to learn?", text: () => "Get in touch to find the right place to start." },
  },
  {
    id: "creative",
    offerText: (o) => `Ask for examples of ${o} and a conversation about your own project.`,
    match:
      /\b(?:photograph\w*|portfolio|artist|art|designer|design studio|illustrat\w+|musician|band|singer|composer|architect\w*|painter|potter\w*|ceramic\w*|film\w*|videograph\w*|writer|author|craft\w*)\b/i,
    tone: "bold",
    offerPage: {
      slug: "work",
      more: "See the work",
      title: "Work",
      navLabel: "Work",
      heading: () => "Selected work",
      intro: (w) => `A look at what ${w.name} does and the kind of projects that fit.`,
    },
    values: [
      ["A personal approach", () => "Every project starts with listening to what you have in mind."],
      ["Attention to detail", () => "Care in the small things is what makes the whole work."],
      ["Clear collaboration", () => "You know what to expect at every step, from first idea to final result."],
    ],
    audience: () => "People and organisations looking for a creative partner they can trust.",
    purpose: (w) => `Present the work of ${w.name} and invite new projects.`,
    steps: {
      heading: "Working together",
      items: [
        ["Share your idea", () => "Tell us what you have in mind, however rough."],
        ["Shape the plan", () => "We agree on scope, timing and what you will receive."],
        ["Bring it to life", () => "The work is made, reviewed with you, and delivered."],
      ],
    },
    faq: [
      [
        "What kind of projects do you take on?",
        (w) => `Projects where ${w.subject} can make a real difference. Describe yours and we will tell you honestly whether it is a fit.`,
      ],
      ["How do we start?", () => "Send a message with a few lines about your project; we reply to arrange a conversation."],
    ],
    cta: {
      label: "Start a project",
      page: "contact",
      heading: () => "Have a project in mind?",
      text: () => "Tell us about it. Every enquiry gets a personal reply.",
    },
  },
  {
    id: "product",
    offerText: (o) => `Built in from the start. Ask us how ${o} fits the way you work.`,
    match: /\b(?:app|apps|software|saas|startup|start-up|product|tool|platform|api|service for developers|game|plugin|extension|device|gadget|launch)\b/i,
    tone: "bold",
    offerPage: {
      slug: "features",
      more: "See the features",
      title: "Features",
      navLabel: "Features",
      heading: () => "What it does",
      intro: (w) => `${w.name} is built to make one job simpler. Here is how.`,
    },
    values: [
      ["Simple from the start", () => "Designed so you get value in minutes, not days."],
      ["Built for real work", () => "Focused on the tasks that matter, without clutter."],
      ["Yours to shape", () => "Feedback from the people who use it decides what comes next."],
    ],
    audience: () => "People who want a simpler way to get their work done.",
    purpose: (w) => `Explain what ${w.name} does, who it is for, and invite people to try it.`,
    steps: {
      heading: "How it works",
      items: [
        ["Get in touch", (w) => `Tell us how you would use ${w.name}.`],
        ["Get started", () => "We help you set things up for the way you work."],
        ["Make it yours", () => "Use it every day and tell us what would make it better."],
      ],
    },
    faq: [
      ["Who is it for?", (w) => `Anyone who needs a ${w.subject} that stays out of the way.`],
      ["How do I try it?", () => "Get in touch and we will tell you how to get access."],
    ],
    cta: {
      label: "Request access",
      page: "contact",
      heading: (w) => `Try ${w.name}`,
      text: () => "Get in touch to get access and be among the first to use it.",
    },
  },
  {
    id: "services",
    offerText: (o) => `Tell us what you need from ${o} and we will reply with a clear proposal.`,
    // Matches anything: the profile of last resort.
    match: /^/,
    tone: "professional",
    offerPage: {
      slug: "services",
      more: "See our services",
      title: "Services",
      navLabel: "Services",
      heading: () => "What we do",
      intro: (w) => `${w.name} helps with the following. Every job starts with a conversation about what you need.`,
    },
    values: [
      ["Clear from the start", () => "You know what will be done, when, and what it involves before work begins."],
      ["Done properly", () => "Careful, reliable work that you do not have to think about twice."],
      ["Easy to reach", () => "Questions get a straight answer from the person doing the work."],
    ],
    audience: (w) => `People and businesses${w.inPlace} looking for a ${w.subject} they can rely on.`,
    purpose: (w) => `Explain what ${w.name} offers and make it easy to get in touch.`,
    steps: {
      heading: "How it works",
      items: [
        ["Tell us what you need", () => "Send a short message describing the job."],
        ["Get a clear proposal", () => "We reply with what we suggest, the timing and the cost."],
        ["We get to work", () => "The work is done as agreed, and we keep you informed."],
      ],
    },
    faq: [
      ["How much does it cost?", () => "It depends on what you need. Describe the job and you will get a clear quote before anything is agreed."],
      ["How soon can you start?", () => "Get in touch with your timing and we will tell you honestly when we can help."],
    ],
    cta: { label: "Get in touch", page: "contact", heading: () => "Let's talk", text: () => "Tell us what you need and we will reply with how we can help." },
  },
];

/**
 * For a goal in a language the writer cannot read: nothing is known about
 * what it is for, so the copy claims nothing and names nothing but what the
 * goal quoted. Every line reads true of any business, club or project.
 */
export const UNREAD_PROFILE: Profile = {
  id: "unread",
  offerText: () => "Ask us about it and we will tell you everything you need to know.",
  match: /^/,
  tone: "professional",
  offerPage: {
    slug: "offer",
    more: "See what we offer",
    title: "What we offer",
    navLabel: "Offer",
    heading: () => "How we can help",
    intro: () => "Here is what you can expect from us, and how to ask about anything else.",
  },
  values: [
    ["Personal attention", () => "Every question gets an answer from a person."],
    ["Clear from the start", () => "You know what to expect before anything is agreed."],
    ["Glad to help", () => "Ask about anything; we will tell you honestly what we can do."],
  ],
  audience: () => "Everyone who would like to know more about what we do.",
  purpose: () => "Say who we are and what we do, and make it easy to take the next step.",
  steps: {
    heading: "How it works",
    items: [
      ["Ask", () => "Tell us what you are looking for."],
      ["Agree", () => "We answer and agree the details with you."],
      ["Enjoy", () => "We do what we agreed, as agreed."],
    ],
  },
  faq: [
    ["Who is this for?", () => "Everyone who is interested. If you are unsure whether we can help, ask us."],
    ["What does it cost?", () => "That depends on what you need; you will always know before anything is agreed."],
  ],
  cta: { label: "Find out more", page: "offer", heading: () => "Find out more", text: () => "See what we offer and how to ask about it." },
};

/**
 * "Cafe" after a trade that serves no food: a repair cafe, where people mend things, and an internet cafe, where
 * they use computers. There "cafe" says where the trade is done, so it chooses no food copy (menus, allergens): the
 * trade decides, and with none of the profiles' words that is the services profile. Only these clear trades: a cat
 * cafe or a book cafe still serves drinks and cake.
 */
const TRADE_CAFE = /\b(repairs?|fix-it|mending|internet|cyber|computer|laptop)\s+caf[e\u00E9]s?(?![\p{L}\p{N}])/giu;

/**
 * The profile that fits a goal best: the one matching the subject's head noun
 * ("wedding photographer" is a photographer, not a wedding), else the first
 * matching the subject, else the whole goal; a trade's "cafe" (TRADE_CAFE) counts as the trade alone.
 */
export function pickProfile(subject: string, goal: string): Profile {
  const what = subject.replace(TRADE_CAFE, "$1");
  const head = what.split(/\s+/).at(-1) ?? what;
  const specific = PROFILES.filter((p) => p.id !== "services");
  return (
    specific.find((p) => p.match.test(head)) ?? specific.find((p) => p.match.test(what)) ?? PROFILES.find((p) => p.match.test(goal.replace(TRADE_CAFE, "$1")))!
  );
}

/** Renders a line or a fixed title with the goal's words. */
export function say(line: string | Line, words: ProfileWords): string {
  return typeof line === "string" ? line : line(words);
}
