/** The language a goal is written in, as the offline writer uses it. */
export interface GoalLanguage {
  /** BCP 47 tag of the goal's language ("ar", "zh"); "en" when it cannot be told. */
  tag: string;
  /** True when the detector was sure enough to act on. */
  detected: boolean;
}

type Detector = (text: string) => { language: string; isReliable(): boolean };
let detector: Promise<Detector> | undefined;

/**
 * Detects the language of a goal with eld (ISO 639-1 codes, 60 languages).
 * Its n-gram data takes about 30 MB once loaded, so it is imported on the
 * first goal the offline writer reads, never by a server that only uses an
 * upstream model. An unreliable answer (a few letters of nothing, "zzzz
 * qqqq") counts as English, the language of the writer's own copy.
 */
export async function detectGoalLanguage(goal: string): Promise<GoalLanguage> {
  detector ??= import("eld/extrasmall").then(
    ({ eld }) =>
      (text: string) =>
        eld.detect(text),
  );
  const detect = await detector;
  // Addresses, links and numbers say nothing about the language and only add noise.
  const words = goal.split(/\s+/).filter((word) => !/[@\d]|^https?:/i.test(word));
  const result = detect(words.join(" "));
  const tag = result.language;
  if (!tag || !result.isReliable()) return { tag: "en", detected: false };
  return { tag, detected: true };
}

/** The English name of a language ("Arabic"), for messages. */
export function languageName(tag: string): string {
  try {
    return new Intl.DisplayNames(["en"], { type: "language" }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}
