import { EMAIL_ADDRESSES, UNSPACED_SCRIPTS, WEB_LINKS } from "../../strings.js";

/** The language a goal is written in, as the offline writer uses it. */
export interface GoalLanguage {
  /**
   * BCP 47 tag of the goal's language ("ar", "zh"; "zh-Hant" for Chinese in Traditional characters, see
   * chineseTag); when it cannot be told, the language of its script for a goal mostly in Han, Kana or Hangul, else "en".
   */
  tag: string;
  /** True when the detector was sure enough to act on. */
  detected: boolean;
}

interface Detection {
  language: string;
  isReliable(): boolean;
  getScores(): Record<string, number>;
}
type Detector = (text: string) => Detection;
let detector: Promise<Detector> | undefined;

/**
 * Grammar words by language, as goals use them ("a", "for", "in"; "een",
 * "voor"; "für", "mit"), and for English the few verbs goals are phrased
 * with ("make", "called", "sells"): they carry no name or subject, so on a
 * goal of a few words they say more about its language than its letters
 * do. A word several languages share counts for each of them.
 */
const FUNCTION_WORDS: Readonly<Record<string, ReadonlySet<string>>> = Object.fromEntries(
  Object.entries({
    en: "a an the and or for of with without my our your their its to at in on by from near about that this which who where is are we i me us please make build create need want called named selling sells offering offers",
    de: "der die das den dem des ein eine einen einem einer und oder für mit ohne von vom zu zum zur im am in an auf aus bei nach über unter ist sind wir ich mein meine meinen meinem meiner unser unsere unseren unserem unserer sie es wo wie bitte",
    nl: "de het een en of voor van met zonder mijn onze ons jouw uw in op aan bij naar uit over is zijn wij we ik die dat waar graag",
    fr: "le la les l un une des du de d et ou pour avec sans mon ma mes notre nos votre à au aux en dans sur chez par est sont nous je qui que où",
    es: "el la los las un una unos unas de del al y o para por con sin mi mis nuestro nuestra nuestros su en es son que donde nosotros yo",
    pt: "o a os as um uma de do da dos das e ou para por com sem meu minha nosso nossa em no na nos nas é são que onde eu nós",
    it: "il lo la i gli le l un una uno di del della dei delle e o per con senza mio mia nostro nostra in a al alla da su è sono che dove noi io",
    ca: "el la els les l un una de del i o per amb sense meu meva nostre nostra a al en és que on",
    sv: "en ett och eller för med utan min mitt mina vår vårt våra i på av till från som är vi jag",
    da: "en et og eller for med uden min mit mine vores i på af til fra som er vi jeg",
    no: "en et ei og eller for med uten min mitt mine vår vårt i på av til fra som er vi jeg",
    pl: "i oraz lub w we z ze na dla do od o mój moja mojej mojego nasz nasza naszej jest są się który która",
    cs: "a nebo v ve na pro s se z do od o můj moje náš naše je jsou který",
    sk: "a alebo v vo na pre s so z do od o môj moja moje náš naša je sú ktorý",
    hu: "a az egy és vagy meg van hogy nem is számára",
    ro: "un o și sau pentru cu fără meu mea nostru noastră în la de din pe este sunt care",
    tr: "bir ve veya için ile bu da de benim bizim",
    id: "untuk dan atau di ke dari yang saya kami dengan ini",
    tl: "ang ng sa para mga at ako aking namin",
    fi: "ja tai on ovat minun meidän varten",
  }).map(([language, words]) => [language, new Set(words.split(" "))]),
);

/** How far below the best language English may score on a short goal's words and still be taken as unsure. */
const UNSURE_MARGIN = 0.15;
/** Words (names aside) up to which a goal counts as short. */
const SHORT_GOAL_WORDS = 8;
/**
 * Letters English words are written with, the accents of its loanwords (café, jalapeño) included; "ä" or "ł" is
 * another language's. As escapes (à â ç è-ë î ï ñ ô û): the server bundle stays ASCII, and esbuild leaves regular expressions as written.
 */
const ENGLISH_LETTERS = /^[\p{ASCII}\u00E0\u00E2\u00E7\u00E8-\u00EB\u00EE\u00EF\u00F1\u00F4\u00FB]*$/iu;

/**
 * Detects the language of a goal with eld (ISO 639-1 codes, 60 languages).
 * Its n-gram data takes about 30 MB once loaded, so it is imported on the
 * first goal the offline writer reads, never by a server that only uses an
 * upstream model. An unreliable answer (a few letters of nothing, "zzzz
 * qqqq") counts as English, the language of the writer's own copy, unless
 * the goal is mostly in Han, Kana or Hangul (one character repeated, say),
 * which no English is written in: then its script tells the language.
 *
 * People type short goals, and a short goal's letters are largely the
 * names in it ("A website for a bicycle repair cafe in Utrecht" scored
 * Dutch, "A bakery in München" German). So a goal in Latin script that eld
 * does not call English is English when its grammar words are more English
 * than any other language's, or, when they are even (often none, or only
 * "in"), when it is short, written in English's letters, and English scores
 * close to the best on its words without the capitalised names. A bare noun
 * and a town ("Friseur in Berlin") can then read as English; the offline
 * writer's copy is English either way, and a goal of any length in another
 * language has grammar words of its own.
 */
export async function detectGoalLanguage(goal: string): Promise<GoalLanguage> {
  detector ??= import("eld/extrasmall").then(
    ({ eld }) =>
      (text: string) =>
        eld.detect(text),
  );
  const detect = await detector;
  const words = withoutAddresses(goal).split(/\s+/).flatMap(languageWords);
  const result = detect(words.join(" "));
  const tag = result.language;
  if (!tag || !result.isReliable()) return { tag: scriptLanguage(words) ?? "en", detected: false };
  if (tag !== "en" && isLatin(words) && readsAsEnglish(words, detect)) return { tag: "en", detected: true };
  return { tag: tag === "zh" ? chineseTag(words) : tag, detected: true };
}

/**
 * Frequent characters Traditional and Simplified Chinese write differently, Traditional first in each pair: a few
 * dozen tell an ordinary goal's script, where a full conversion table (OpenCC's) would be a dependency of megabytes
 * for one yes or no. Pairs whose Simplified form is also a Traditional character of its own (面 "face" beside 麵,
 * 后 "empress" beside 後, 于, 里, 台, 干) are left out: they are in both scripts' text.
 */
const SCRIPT_PAIRS = (
  "這这 個个 們们 來来 為为 時时 會会 說说 對对 網网 頁页 書书 學学 國国 與与 點点 開开 關关 經经 發发 過过 還还 " +
  "種种 樣样 實实 現现 問问 題题 電电 車车 東东 長长 門门 間间 聽听 讀读 寫写 買买 賣卖 錢钱 價价 專专 業业 廳厅 " +
  "場场 館馆 飲饮 藝艺 術术 師师 務务 營营 歡欢 幫帮 話话 產产 灣湾 華华 區区 園园 圖图 畫画 從从 讓让 給给 請请 " +
  "設设 計计 課课 運运 動动 醫医 愛爱 樂乐 熱热 線线 訂订 購购 費费 員员 鮮鲜 湯汤 雞鸡 魚鱼 飯饭"
).split(" ");
const TRADITIONAL_ONLY: ReadonlySet<string> = new Set(SCRIPT_PAIRS.map((pair) => pair[0]!));
const SIMPLIFIED_ONLY: ReadonlySet<string> = new Set(SCRIPT_PAIRS.map((pair) => pair[1]!));

/**
 * A Chinese goal's tag: "zh-Hant" when it has more of the characters only Traditional writes than of those only
 * Simplified writes, as a goal typed in Taiwan or Hong Kong does, so its site's fixed words and fonts are
 * Traditional too; else "zh", Simplified, also for a goal of characters both scripts share.
 */
function chineseTag(words: readonly string[]): string {
  const characters = [...words.join("")];
  const traditional = characters.filter((character) => TRADITIONAL_ONLY.has(character)).length;
  const simplified = characters.filter((character) => SIMPLIFIED_ONLY.has(character)).length;
  return traditional > simplified ? "zh-Hant" : "zh";
}

/** A letter of a script written without spaces between words, where one "word" can be the whole goal. */
const UNSPACED_LETTER = new RegExp(`[${UNSPACED_SCRIPTS}]`, "u");

/**
 * The goal without its e-mail addresses and links, which tell no language: cut out of the text, not dropped with
 * the "word" around them, which in a script written without spaces is the whole goal ("…メールはinfo@…jpです。").
 */
function withoutAddresses(goal: string): string {
  return goal.replace(EMAIL_ADDRESSES, " ").replace(WEB_LINKS, " ");
}

/**
 * The parts of a white-space-separated word that tell its language: none
 * of a word with a number or an "@" in it ("10am", "£2.20", "@crumbs"),
 * which only adds noise. In a script written without spaces that "word"
 * may be a whole sentence, so only its numbers and punctuation go.
 */
function languageWords(word: string): string[] {
  if (word === "") return [];
  if (!/[\d@]/.test(word)) return [word];
  return UNSPACED_LETTER.test(word) ? word.split(/[^\p{L}\p{M}]+/u).filter((part) => part !== "") : [];
}

/**
 * The language a goal mostly in Han, Kana or Hangul is written in, by its script alone: Korean with Hangul,
 * Japanese with Kana, else Chinese (in the script its characters are, see chineseTag); none for a goal in any
 * other script.
 */
function scriptLanguage(words: readonly string[]): string | undefined {
  const letters = words.join("").match(/\p{L}/gu) ?? [];
  const count = (script: RegExp) => letters.filter((letter) => script.test(letter)).length;
  const hangul = count(/\p{Script=Hangul}/u);
  const kana = count(/[\p{Script=Hiragana}\p{Script=Katakana}]/u);
  const han = count(/\p{Script=Han}/u);
  if (letters.length === 0 || (hangul + kana + han) / letters.length < 0.5) return undefined;
  if (hangul > 0) return "ko";
  return kana > 0 ? "ja" : chineseTag(words);
}

/** True when most of the goal's letters are Latin: the scripts whose words grammar-word lists can tell apart. */
function isLatin(words: readonly string[]): boolean {
  const letters = words.join("").match(/\p{L}/gu) ?? [];
  const latin = letters.filter((letter) => /\p{Script=Latin}/u.test(letter)).length;
  return letters.length > 0 && latin / letters.length >= 0.8;
}

/** The English reading of a Latin-script goal the n-grams gave to another language (see detectGoalLanguage). */
function readsAsEnglish(words: readonly string[], detect: Detector): boolean {
  const counts = grammarWordCounts(words);
  const english = counts.get("en") ?? 0;
  const other = Math.max(0, ...[...counts].filter(([language]) => language !== "en").map(([, count]) => count));
  if (english !== other) return english > other;
  const unnamed = withoutNames(words);
  if (unnamed.length === 0 || unnamed.length > SHORT_GOAL_WORDS || !ENGLISH_LETTERS.test(unnamed.join(" "))) return false;
  const scores = detect(unnamed.join(" ")).getScores();
  const best = Math.max(0, ...Object.values(scores));
  return best - (scores.en ?? 0) < UNSURE_MARGIN;
}

/** How many of the goal's words are grammar words of each language. */
function grammarWordCounts(words: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const token of words
    .join(" ")
    .toLowerCase()
    .split(/[^\p{L}]+/u)) {
    if (token === "") continue;
    for (const [language, list] of Object.entries(FUNCTION_WORDS)) {
      if (list.has(token)) counts.set(language, (counts.get(language) ?? 0) + 1);
    }
  }
  return counts;
}

/** The goal without capitalised words inside a sentence: the names and places, which are in their own language. */
function withoutNames(words: readonly string[]): string[] {
  return words.filter((word, i) => i === 0 || /[.!?:]$/.test(words[i - 1]!) || !/^\P{L}*\p{Lu}/u.test(word));
}

/** The English name of a language ("Arabic"), for messages. */
export function languageName(tag: string): string {
  try {
    return new Intl.DisplayNames(["en"], { type: "language" }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}
