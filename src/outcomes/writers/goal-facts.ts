import { EMAIL_ADDRESSES, hasVisibleCharacter, trimEndOf, WEB_LINKS, withoutNameControls } from "../../strings.js";
import { websiteBriefSchema } from "../content.js";
import { shortenAtWords } from "../json-schema.js";

/**
 * What the offline writer can read from a goal without a language model:
 * plain pattern matching on the sentence a person typed. Everything found is
 * quoted from the goal; nothing is invented here.
 */
export interface GoalFacts {
  /**
   * The name to show: given in the goal, or (in English) made from its
   * subject and place; absent when a goal the writer cannot read quotes none.
   */
  name: string | undefined;
  /** True when the goal gave the name itself. */
  namedInGoal: boolean;
  /** What the site is for, as a noun phrase from the goal ("small bakery"); absent when the goal is not in English. */
  subject: string | undefined;
  /** A place named after "in", "at" or "near". */
  place: string | undefined;
  /** Things the goal says are sold, offered, made or taught. */
  offerings: string[];
  /** Things the goal asks the site to have ("opening hours", "a way to order cakes"). */
  features: string[];
  /** Who it is for, when the goal says ("young families"). */
  audience: string | undefined;
  email: string | undefined;
  phone: string | undefined;
  /** When it is open, as the goal wrote it ("Tue-Sat 8:00-16:00", "on Saturdays"); absent when the goal is not in English. */
  hours: string | undefined;
}

const SITE_WORDS =
  /\b(?:(?:simple|small|new|modern|nice|clean|beautiful|one-page|single-page|static)\s+)*(?:web\s*site|site|landing\s+page|home\s*page|web\s+page|page|online\s+presence|portfolio\s+site)\b/i;
/** A full stop or a colon that ends a clause; the point or colon inside a number ("£2.20", "7.30", "10:00") ends nothing. */
const FULL_STOP = String.raw`(?:(?<!\d)\.|\.(?!\d))`;
const COLON = String.raw`(?:(?<!\d):|:(?!\d))`;
/**
 * Commas, "and", "or", "&" and "+" between items; the comma inside a number ("£1,299") is part of it. Captured, so
 * a split keeps them between the items.
 */
// eslint-disable-next-line regexp/no-super-linear-move -- bounded goal text (see the note above readGoal)
const LIST_SPLIT = /(\s*(?:(?<!\d),|,(?!\d))\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*&\s*|\s*\+\s*)/i;
const STOP = String.raw`(?=\s+(?:in|at|near|based|located|called|named|that|which|who|where|with|including|to|so|because|selling|offering|where|(?:on|by|along|beside|overlooking)\s+the)\b|[,;!?()]|${FULL_STOP}|${COLON}|$)`;
const COMMAND = /^\s*(?:please\s+)?(?:make|build|create|design|write|set up|i need|we need|i want|we want)\s+(?:me\s+|us\s+)?/i;
const ARTICLES = /^(?:my|our|a|an|the|his|her|their|some|its|your)\s+/i;
/** A clause rather than a thing ("we want people to join", "I need"): a list split mid-sentence, never an offering. */
const CLAUSE = /^(?:we|i|you|they|he|she|it|us|them|there)\b|\b(?:we|i|you|they) (?:want|need|would like)\b/i;
const NAME_FILLERS = /^(?:small|little|new|local|simple|tiny|independent|family|family-run|friendly|modern|own|personal)\s+/i;
/** Days and months, whole or shortened: "Mon-Sat" and "Tuesday to Sunday" say when, not who. */
const CALENDAR_WORD =
  /^(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?$/i;
/** Words that say when, besides days and months (CALENDAR_WORD): seasons, parts of the day or week, clock times and ranges ("9-5", "10am"). */
const WHEN_WORD =
  /^(?:spring|summer|autumn|fall|winter|early|late|mornings?|afternoons?|evenings?|nights?|days?|weekdays?|weekends?|weeks?|months?|years?|terms?|holidays?|daily|weekly|fortnightly|monthly|nightly|noon|midnight|am|pm|\d{1,2}(?:[.:]\d{2})?(?:am|pm)?(?:-\d{1,2}(?:[.:]\d{2})?(?:am|pm)?)?)$/i;
/** The small words between those ("every spring and autumn", "from 9 to 5"). */
const WHEN_JOINING_WORD = /^(?:every|each|all|year-round|round|only|once|twice|on|in|at|from|to|until|till|through|the|a|and|or|-)$/i;
/** The word before the times something is open ("open on Saturdays", "closed on Mondays"); "open mic nights" is a thing. */
const OPEN_OR_CLOSED = /^(?:open|opens|closed)\s+/i;
/**
 * The noun of a place or business after a trade word ("bicycle repair cafe", "design studio", "cake making class"):
 * there the trade word names the business, it is no verb ("repair" of "we repair bikes").
 */
const BUSINESS_NOUN = /^(?:caf[e\u00E9]|shop|studio|workshop|business|company|firm|agency|cent(?:re|er)|class|course|club|school|stall|van)$/i;
/** The longest name a brief may have: a name up to it is kept whole, a longer one shortened at a word. */
const NAME_MAX = websiteBriefSchema.properties.name.maxLength;
/** The words that give the name after them: "called", "named", "titled", "branded as". */
const CALLED = /\b(?:called|named|titled|brand(?:ed)? as)\s+/giu;
/** The name after CALLED when it is not in quotes: up to the next clause. */
const CALLED_UNQUOTED =
  // eslint-disable-next-line regexp/no-super-linear-backtracking -- bounded goal text (see the note above readGoal)
  /^[\u201C"'\u2018]?([^\u201C\u201D"'\u2019.,;:!?]+?)[\u201D"'\u2019]?(?=\s+(?:that|which|who|for|with|in|at|to|and|,)\b|[.,;:!?]|$)/u;
/**
 * Double quotation marks of every script, each opening mark with the marks that close it; of two pairs with the same
 * opening mark, the first is read when its closing mark follows.
 */
const DOUBLE_QUOTES: readonly [open: string, close: string][] = [
  ['"', '"'],
  ["\u201C", "\u201D"],
  ["\u201E", "\u201C\u201D"],
  // German „…" typed on a keyboard without \u201C: the straight quote closes it.
  ["\u201E", '"'],
  ["\u00AB", "\u00BB"],
  // German and Danish \u00BB…\u00AB, Swedish and Finnish \u00BB…\u00BB.
  ["\u00BB", "\u00AB\u00BB"],
  ["\u2039", "\u203A"],
  ["\u300C", "\u300D"],
  ["\u300E", "\u300F"],
];
/** Single quotation marks, each opening mark with the marks that close it: '…', \u2018…\u2019, and German \u201A…\u2018. */
const SINGLE_QUOTES: readonly [open: string, close: string][] = [
  ["'\u2018", "'\u2019"],
  ["\u201A", "\u2018\u2019"],
];
/**
 * Text in quotation marks: double ones of any script ("…", \u201C…\u201D, \u201E…\u201C, \u201E…", \u00AB…\u00BB,
 * \u00BB…\u00AB, \u2039…\u203A, \u300C…\u300D, \u300E…\u300F), or single ones ('…', \u2018…\u2019, \u201A…\u2018) outside a
 * word, so the apostrophes of "Robert's" and "the Smiths'" open and close nothing. Whichever opens first holds, up
 * to its own closing mark, the quotes of any other kind inside it («Chez "Paul"», „Bäckerei "Zum Löwen" GmbH“). A
 * group per double kind, then one per single kind.
 */
const QUOTED = new RegExp(
  [
    ...DOUBLE_QUOTES.map(([open, close]) => `${open}([^${close}]+)[${close}]`),
    ...SINGLE_QUOTES.map(([open, close]) => String.raw`(?<![\p{L}\p{N}])[${open}]([^${open}${close}]+)[${close}](?![\p{L}\p{N}])`),
  ].join("|"),
  "gu",
);
const FIRST_SINGLE_QUOTED_GROUP = DOUBLE_QUOTES.length + 1;
/**
 * Where a quotation stood in the text readSubject reads: NUL, which no goal has left (readGoal), around its number.
 * An introducing word before it ("called") is matched with it.
 */
const QUOTATION_MARKER = new RegExp(String.raw`(${CALLED.source})?\u0000(\d+)\u0000`, "giu");
/**
 * A double quotation mark, or the low single one (\u201A), that opens a word: left open in a subject, it was cut
 * from inside quotes. Another single one may be an apostrophe ("'90s").
 */
const OPENING_QUOTE = /(?<=^|[\s(])["\u201C\u201E\u00AB\u00BB\u2039\u300C\u300E\u201A](?=\S)/u;
/**
 * Words that end in a full stop inside a name: an initial ("J. R."), titles ("Dr.", "St."), company forms
 * ("Co.", "Inc.", "Ltd."), "No.", "Bros.", "Ave.". Matched against the name up to and including the stop.
 */
const ABBREVIATION = /(?<=^|[\s(.&/-])(?:\p{L}|dr|mr|mrs|ms|mx|prof|rev|st|ste|mt|ft|no|co|corp|inc|ltd|llc|plc|bros|jr|sr|ave|rd)\.$/iu;
/** An HTML entity typed as such ("&amp;", "&#38;"): its ";" ends no clause. */
const TYPED_ENTITY = /&#?[a-z\d]{1,31};/giu;
/** Short words a title leaves in lower case ("House of Pies"); titleCase keeps them so. */
const JOINING_WORD = /^(?:and|or|of|the|a|an|in|on|for|to|with|de|du|la)$/i;

/**
 * Reads a goal. Deterministic: the same goal always gives the same facts.
 *
 * The ReDoS check flags several patterns here as polynomial on adversarial
 * text. They run only on a goal, which is at most 2,000 code points with its
 * white space collapsed to single spaces first; the worst of the 3,200
 * adversarial goals of test/outcomes/goal-facts-bounds.test.ts (built from
 * these patterns' own tokens, quotation marks of every kind among them)
 * takes a few ms, and that test holds a bound far below a stall.
 */
export function readGoal(goal: string, language = "en"): GoalFacts {
  const text = readableText(goal);
  const email = text.match(EMAIL_ADDRESSES)?.[0];
  const phone = readPhone(text);
  const withoutContacts = text
    .replace(email ?? "\u0000", "")
    .replace(phone ?? "\u0000", "")
    // Web addresses name no one, and their scheme is no word ("Https").
    .replace(WEB_LINKS, "");
  // The patterns below read English. In any other language they would cut
  // sentences into "names" and "offerings", so only what is marked in every
  // script is read: a quoted name, an address, a number.
  if (language !== "en") {
    const quoted = quotations(withoutContacts).find(givesName)?.name;
    return {
      name: fittedName(quoted),
      namedInGoal: quoted !== undefined,
      subject: undefined,
      place: undefined,
      offerings: [],
      features: [],
      audience: undefined,
      email,
      phone,
      hours: undefined,
    };
  }

  const place = /\b(?:in|at|near|based in|located in)\s+((?:[A-Z][\p{L}'-]+)(?:[ -](?:[A-Z][\p{L}'-]+|de|du|la|le|sur|upon|on))*)/u.exec(withoutContacts)?.[1];
  // "for Maison Dupont, a family-run florist": a name, then what it is.
  const appositive =
    // eslint-disable-next-line regexp/no-super-linear-backtracking -- bounded goal text (see the note above readGoal)
    /\b(?:for|about)\s+([A-Z][\p{L}\d'&-]*(?:\s+[A-Z][\p{L}\d'&-]*)*),\s+(?:a|an|the|my|our)\s+([^,.;:!?]+?)(?=\s+(?:in|at|near|based|that|which|who|with|for)\b|[,.;:!?]|$)/u.exec(
      withoutContacts,
    );
  const quotes = quotations(withoutContacts);
  const subject = appositive?.[2]?.trim() ?? readSubject(withoutContacts, quotes);
  const given = (appositive?.[1] ? visibleName(appositive[1]) : undefined) ?? readGivenName(withoutContacts, quotes);
  const name = fittedName(given ?? (subject === undefined ? undefined : madeName(subject, place)));

  const offerings = uniqueItems(
    [
      ...withoutContacts.replace(COMMAND, "").matchAll(
        // Built per goal, so the ReDoS check cannot read it; it is as polynomial as its neighbours (see the note above readGoal).
        // "for" followed by a price belongs to the item ("tea for $1.99"). "Repair", "design", "host" and "do" are verbs
        // after a pronoun ("we repair bikes"); elsewhere they are nouns ("garden design", "bike repair").
        new RegExp(
          String.raw`\b${notTheSubjectsTrade(subject)}(?:sells?|selling|offers?|offering|makes?|making|bakes?|baking|serves?|serving|teaches|teaching|teach|provides?|providing|brews?|brewing|repairs|repairing|grows?|growing|designs|designing|hosts|hosting|organi[sz]es?|(?<=\b(?:we|i|they|who|that)\s+)(?:repair|design|host|do))\s+(.+?)(?=\s+(?:with|for(?!\s+\p{Sc}?\d)|to|so|where|that|because|in order)\b|\s+(?:in|at|near)\s+\p{Lu}|[;!?()]|${FULL_STOP}|${COLON}|,\s*(?:with|and (?:a|an|has|wants?|needs?))\b|$)`,
          "giu",
        ),
      ),
    ].map((m) => m[1] ?? ""),
  );
  const features = uniqueItems(
    [
      ...withoutContacts.matchAll(
        new RegExp(
          // eslint-disable-next-line regexp/no-super-linear-backtracking -- bounded goal text (see the note above readGoal)
          String.raw`\b(?:with|including|featuring|plus|showing|that (?:shows|lists|has)|should (?:have|show|include))\s+(.+?)(?=[;!?()]|${FULL_STOP}|$)`,
          "gi",
        ),
      ),
    ].map((m) => m[1] ?? ""),
  ).filter((f) => !SITE_WORDS.test(f));
  const audience =
    /\b(?:aimed at|targeting|designed for|for people who|for customers who)\s+([^.;,]+)/i.exec(withoutContacts)?.[1]?.trim() ??
    /\bfor\s+((?:young\s+|busy\s+|local\s+|small\s+|new\s+)?(?:families|parents|kids|children|students|beginners|professionals|developers|businesses|companies|teams|tourists|visitors|locals|seniors|musicians|artists|runners|travellers|travelers|couples|dog owners|homeowners|writers|readers|teachers|nurses|doctors|creators)(?:\s+[a-z]+){0,4}?)(?=[.,;]|\s+(?:who|that|with|in|and)\b|$)/i
      .exec(withoutContacts)?.[1]
      ?.trim();

  return { name, namedInGoal: given !== undefined, subject, place, offerings, features, audience, email, phone, hours: readHours(withoutContacts) };
}

/** What introduces when a place is open: "open", "opens", "opening hours:", "hours are". */
const HOURS_INTRO = /\b(?:open(?:s|ing)?\s+(?:hours|times)\s*(?::|are\b)?|hours\s*(?::|are\b)|open|opens)\s+/giu;

/**
 * When the goal says it is open: the words after HOURS_INTRO while each says when ("Tue-Sat 8:00-16:00",
 * "Monday to Friday 9am-6pm", "on Saturdays", "daily 9-5, Sun 10-4"), as the goal wrote them; none if none does.
 */
function readHours(text: string): string | undefined {
  for (const intro of text.matchAll(HOURS_INTRO)) {
    const words: string[] = [];
    for (const word of text.slice(intro.index + intro[0].length).split(/\s+/)) {
      const bare = trimEndOf(word, ",;.!?)");
      if (!(saysWhen(bare) || WHEN_JOINING_WORD.test(bare) || bare.split(/[-\u2013]/).every((part) => part !== "" && saysWhen(part)))) break;
      // A comma goes on to the next days ("Mon-Fri 9-5, Sat 10-2"); any other stop ends them.
      const goesOn = bare === word || word.endsWith(",");
      words.push(goesOn ? word : bare);
      if (!goesOn) break;
    }
    while (words.length > 0 && WHEN_JOINING_WORD.test(words.at(-1)!.replace(/,$/, ""))) words.pop();
    if (words.some((word) => !WHEN_JOINING_WORD.test(word))) return words.join(" ").replace(/,$/, "");
  }
  return undefined;
}

/**
 * `text` as a name: readable text (readableText); none when nothing in it can be seen (a goal of zero-width spaces,
 * bare accents, quotes around punctuation). Goal and feedback alike.
 */
export function visibleName(text: string): string | undefined {
  const name = readableText(text);
  return hasVisibleCharacter(name) ? name : undefined;
}

/**
 * `text` composed (NFC), so a decomposed accent (text pasted from macOS) is part of its letter, not the end of a
 * word; without the controls no name keeps; its white space one space. White space is tidied first: a vertical tab
 * (a line break pasted from Word) is a control XML forbids, but it parts two words.
 */
function readableText(text: string): string {
  return tidyName(withoutNameControls(tidyName(text.normalize("NFC"))));
}

/** A name no longer than a brief's, shortened at a word: its full stops are abbreviations' ("Dr."), no sentence's end. */
function fittedName(name: string | undefined): string | undefined {
  return name === undefined ? undefined : shortenAtWords(name, NAME_MAX);
}

// Curly quotes as escapes (\u2018 \u2019 \u201C \u201D): the server bundle stays ASCII (see src/build.ts).
/** The name `text` gives; `quoted` is its quotations(). */
function readGivenName(text: string, quoted: readonly Quotation[]): string | undefined {
  // "Called" inside quotes is part of them ('The Place Called Home'): the quoted name is the one given.
  const inQuotes = (index: number) => quoted.some((q) => index > q.start && index < q.end);
  for (const match of text.matchAll(CALLED)) {
    if (inQuotes(match.index)) continue;
    const at = match.index + match[0].length;
    // "called "Dr. Lee Dental"": the quoted name whole, its full stops and all; a quoted sentence there names nothing.
    const quote = quoted.find((q) => q.start === at);
    const called = quote ? quote.name : calledName(text.slice(at));
    if (called) return called;
  }
  const first = quoted.find(givesName);
  if (first) return first.name;
  // A run of capitalised words after the first word is probably a name ("for Maison Dupont, a bakery").
  for (const match of text.matchAll(
    /(?<!^|[.!?]\s)(?<!\b(?:in|at|near)\s)\b((?:\p{Lu}[\p{L}'&-]*\d*)(?:\s+(?:\p{Lu}[\p{L}'&-]*|&|of|the|and|de|du|la))*\s*(?:\p{Lu}[\p{L}'&-]*))/gu,
  )) {
    const proper = match[1];
    if (!proper || /^(?:I|A|An|The|My|Our|We|Please|Make|Build|Create)$/.test(proper) || proper.split(" ").length > 5 || onlyLooksLikeName(proper)) continue;
    // "in Durham", "on the River Wear", "by the Old Bridge": where it is, not who.
    const precededByPlaceWord = new RegExp(
      String.raw`\b(?:(?:in|at|near|based in|located in)\s+|(?:on|by|along|beside|off|across|over|overlooking)\s+the\s+)${escapeRegExp(proper)}`,
    ).test(text);
    if (!precededByPlaceWord) return visibleName(proper);
  }
  return undefined;
}

/**
 * Digits set out as a phone number: groups joined by a space, a dot or a
 * hyphen, or by brackets ("+44 (0)20 7946 0000", "(555) 123-4567"), not
 * part of a word, a price or a longer number.
 */
const NUMBER_LAYOUT = /(?<![\w\p{Sc}.,/+-])\+?(?:\(\d{1,5}\) ?)?\d+(?:(?: ?[.-] ?| |\) ?| ?\()\d+)*(?!\w)/gu;
const TIME = String.raw`(?:(?:[01]?\d|2[0-3])[.:][0-5]\d|(?:[01]\d|2[0-3])[0-5]\d)`;
/** Numbers set out like that which are something else: a date (01.02.2003, 2003-02-01), opening hours (08.00-18.00, 0800 - 1800), a ZIP+4 code. */
const NOT_A_PHONE = new RegExp(String.raw`^(?:\d{1,2}([.-])\d{1,2}\1(?:\d{2}|\d{4})|\d{4}([.-])\d{1,2}\2\d{1,2}|${TIME} ?- ?${TIME}|\d{5}-\d{4})$`);
/**
 * The word for a phone, or for calling, in the languages goals are read in and in Russian, Greek, Arabic, Hebrew and
 * Hindi: regular-expression sources, a language's to a line. Strings, not a literal, so the server bundle stays ASCII
 * (esbuild escapes a string's letters, but leaves a regular expression literal as written).
 */
const PHONE_WORDS = [
  "tel(?:ephone)?|phone|call|ring|mobile?|cell|whatsapp", // en; "tel" and "mobil" also de, nl, es, pt, it, sv, da, no, pl, cs, sk, hu, ro, tr
  "telefon(?:nummer|szám)?|handy", // de, sv, da, no, pl, cs, hu, ro, tr
  "telefoon(?:nummer)?|bel|mobiel", // nl
  "t[eé]l[eé]phone|t[eé]l|portable", // fr
  "tel[eé]fono|tfno|m[oó]vil|celular|cellulare", // es, it
  "telefone|telem[oó]vel", // pt
  "tel[eè]fon|m[oò]bil", // ca
  "tlf", // da, no
  "kom[oó]rka", // pl
  "telef[oó]n", // sk
  "cep", // tr
  "telepon|telp|telepono", // id, tl
  "puhelin|puh", // fi
  "тел(?:ефон)?", // ru
  "τηλ(?:[εέ]φωνο)?", // el
  "(?:ال)?(?:هاتف|جوال)", // ar
  "טלפון", // he
  "\u092B\u094B\u0928|\u092B\u093C\u094B\u0928", // hi: फोन, and फ़ोन, which NFC writes as फ and a nukta
];
/** The same in scripts written without spaces, where it may follow any word, with the particle after it ("電話は"). */
const UNSPACED_PHONE_WORDS = [
  "電話(?:番号|號碼)?[は是]?", // ja, and zh in traditional characters
  "电话(?:号码)?是?", // zh
  "전화(?:번호)?는?", // ko
  "โทร(?:ศัพท์)?", // th
];
/**
 * The words a number follows when it is a phone number: "phone", "call us on", "tel.:", "mobile number", "Telefon",
 * "τηλέφωνο", "電話番号：". Outside a script written without spaces the word starts a word ("Hotel" is none).
 */
const PHONE_WORD = new RegExp(
  String.raw`(?:(?<![\p{L}\p{M}\p{N}])(?:${PHONE_WORDS.join("|")})(?:\s+(?:us|me|them))?(?:\s+(?:number|no))?(?:\s+(?:on|at|is))?|${UNSPACED_PHONE_WORDS.join("|")})[\s.:#\uFF1A-]*$`,
  "iu",
);
/** The North American layouts, (555) 123-4567 and 555-123-4567 (or dots), which need no introduction. */
const NORTH_AMERICAN = /^(?:\(\d{3}\) ?|\d{3}([.-]))\d{3}[.-]\d{4}$/;

/**
 * The goal's phone number, if it gives one it is sure of: 7 to 15 digits,
 * after a word like "phone" or "call", in international form (+44 …), in a
 * North American layout, or a national number that starts with 0 and has
 * 9 digits or more. A date or opening hours set out the same way is none;
 * when in doubt, none ("or not at all").
 */
function readPhone(text: string): string | undefined {
  for (const match of text.matchAll(NUMBER_LAYOUT)) {
    const number = match[0];
    const digits = number.replace(/\D/g, "").length;
    if (digits < 7 || digits > 15 || NOT_A_PHONE.test(number)) continue;
    const introduced = PHONE_WORD.test(text.slice(Math.max(0, match.index - 40), match.index));
    if (introduced || number.startsWith("+") || NORTH_AMERICAN.test(number) || (number.startsWith("0") && digits >= 9)) return number;
  }
  return undefined;
}

/** Capitalised words that name no one: days and months ("Mon-Sat"), and acronyms or code in capitals throughout ("IT", "DROP TABLE"). */
function onlyLooksLikeName(words: string): boolean {
  const parts = words.split(/[\s&/-]+/).filter((part) => part !== "");
  return parts.every((part) => CALENDAR_WORD.test(part)) || !/\p{Ll}/u.test(words);
}

export interface Quotation {
  /** The quotation as written, its marks included. */
  text: string;
  /** In single quotation marks: the opening one may be an apostrophe ("'90s"), and the closing one ("the Smiths'"). */
  single: boolean;
  /** What is inside the marks, white space tidied. */
  inner: string;
  /** The name it gives, if it is one (quotedName). */
  name: string | undefined;
  /** Where it stands in the text, its marks included. */
  start: number;
  end: number;
}

/**
 * `text` with each of its quotations (`quotes`, from `quotations(text)`) as NUL, its index, NUL: what is quoted is
 * one thing, and its words and punctuation end no clause. Readers take NUL out of the text first.
 */
export function withQuotationMarkers(text: string, quotes: readonly Quotation[]): string {
  let masked = "";
  let from = 0;
  for (const [i, quote] of quotes.entries()) {
    masked += `${text.slice(from, quote.start)}\u0000${i}\u0000`;
    from = quote.end;
  }
  return masked + text.slice(from);
}

/** Every text in quotation marks of either kind (QUOTED), first first, found in one pass: none inside another. */
export function quotations(text: string): Quotation[] {
  return [...text.matchAll(QUOTED)].map((match) => {
    const single = match.slice(FIRST_SINGLE_QUOTED_GROUP).some((group) => group !== undefined);
    const inner = tidyName(match.slice(1).find((group) => group !== undefined) ?? "");
    return { text: match[0], single, inner, name: quotedName(inner), start: match.index, end: match.index + match[0].length };
  });
}

/**
 * True when a quotation gives the name with nothing introducing it: a name in double quotation marks of any script,
 * or in single ones when it starts as a title does ('The Place Called Home'). Else single ones may be apostrophes
 * ("we sell '90s vinyl, the Smiths' records"), and their name is taken only after "called".
 */
export function givesName(quotation: Quotation): boolean {
  return quotation.name !== undefined && (!quotation.single || /^[\p{Lu}\p{Lt}\p{Lo}]/u.test(quotation.inner));
}

/** The name after "called" (CALLED) when it is not in quotes: up to the next clause. */
function calledName(rest: string): string | undefined {
  return visibleName(CALLED_UNQUOTED.exec(rest)?.[1] ?? "");
}

/**
 * Quoted text as a name: taken as written (spaces inside French guillemets
 * aside), its abbreviations, brackets and ampersands and all, however many
 * words it has (a name longer than a brief's is shortened at a word later,
 * as any name). A quoted sentence is no name, nor are quotes around nothing
 * a person can see.
 */
function quotedName(quoted: string): string | undefined {
  const name = visibleName(quoted);
  return name !== undefined && [...name].length >= 2 && !isSentence(name) ? name : undefined;
}

/**
 * True when quoted text reads as a sentence rather than a name: it holds a
 * full stop in CJK, a clause break ("; " or ": ", but not the ";" of an
 * entity typed as such, "&amp;"), or a full stop before a capitalised word
 * that is not an abbreviation's ("Fresh bread. Open daily"); or it is three
 * words or more ending as a sentence does, not on an abbreviation, with a
 * word in lower case that a title would capitalise ("We bake bread every
 * day.", but not "Who Is Afraid of Virginia Woolf?"), or in a script
 * without capitals.
 */
function isSentence(text: string): boolean {
  if (/[\u3002\uFF01\uFF1F]/u.test(text) || /[;:]\s/u.test(text.replace(TYPED_ENTITY, "&"))) return true;
  for (const stop of text.matchAll(/\.(?=\s+\p{Lu})/gu)) {
    if (!ABBREVIATION.test(text.slice(0, stop.index + 1))) return true;
  }
  const ending = text.replace(/(?<!["'\u2019\u201D)\]])["'\u2019\u201D)\]]+$/u, "");
  if (!/[.!?\u061F]$/u.test(ending) || ABBREVIATION.test(ending)) return false;
  const words = text.split(" ").filter(hasVisibleCharacter);
  const untitled = words.slice(1).some((word) => /^\p{Ll}/u.test(word) && !JOINING_WORD.test(word)) || !/\p{Lu}/u.test(text);
  return words.length >= 3 && untitled;
}

/** What the thing is, as `text` says it; `quotes` is its quotations(). */
function readSubject(text: string, quotes: readonly Quotation[]): string | undefined {
  const patterns = [
    // eslint-disable-next-line regexp/no-super-linear-backtracking -- bounded goal text (see the note above readGoal)
    new RegExp(String.raw`\b(?:for|about|promoting|presenting|showcasing)\s+(.+?)${STOP}`, "i"),
    // eslint-disable-next-line regexp/no-super-linear-backtracking -- bounded goal text (see the note above readGoal)
    new RegExp(String.raw`^(?:(?:a|an|the|my|our)\s+)?(.+?)${STOP}`, "i"),
  ];
  // "A website for X" names X after "for"; "Spanish lessons for beginners" names it first.
  if (!SITE_WORDS.test(text) && !COMMAND.test(text)) patterns.reverse();
  // What is in quotes is one thing: a word or a full stop in it ("The Place Called Home", "Dr. Lee") ends no clause.
  const masked = withQuotationMarkers(text, quotes);
  for (const pattern of patterns) {
    const found = pattern.exec(masked.replace(COMMAND, "").replace(SITE_WORDS, ""))?.[1];
    if (found === undefined) continue;
    let phrase = found
      .replace(ARTICLES, "")
      .replace(/^(?:for|about)\s+/i, "")
      .replace(ARTICLES, "")
      // A quotation mark the clause was cut from ("for Robert'); …").
      .replace(/^['"\u2018\u2019\u201C\u201D]+/, "")
      .replace(/(?<!['"\u2018\u2019\u201C\u201D])['"\u2018\u2019\u201C\u201D]+$/, "");
    // One left open further on: what follows it was cut from inside quotes.
    const open = OPENING_QUOTE.exec(phrase);
    if (open) phrase = phrase.slice(0, open.index);
    phrase = phrase.trim();
    // Quoted text is what the thing is when it is all the phrase ("for "St. Mary Bakery""), unless it is a sentence.
    // Before or after other words, a quoted name or sentence says what the thing is called or says, not what it is
    // ("dental clinic "Dr. Lee Dental""): left out, and so is a quoted name with the word introducing it ("called
    // "Crumbs""). Anywhere else it stays, quotes and all.
    const whole = /^\u0000(\d+)\u0000$/u.exec(phrase)?.[1];
    if (whole !== undefined && isSentence(quotes[Number(whole)]!.inner)) continue;
    const subject =
      whole !== undefined
        ? quotes[Number(whole)]!.inner
        : phrase
            .replace(QUOTATION_MARKER, (marker, introduced: string | undefined, i: string, at: number) => {
              const quote = quotes[Number(i)]!;
              const atEdge = at === 0 || at + marker.length === phrase.length;
              const namesOrSays = quote.name !== undefined || isSentence(quote.inner);
              return (introduced !== undefined && quote.name !== undefined) || (atEdge && namesOrSays) ? "" : `${introduced ?? ""}${quote.text}`;
            })
            .trim();
    const readable = subject.length >= 3 && subject.split(" ").length <= 6 && hasVisibleCharacter(subject) && !SITE_WORDS.test(subject);
    if (readable) return subject;
  }
  return undefined;
}

function madeName(subject: string, place: string | undefined): string {
  let core = subject;
  while (NAME_FILLERS.test(core)) core = core.replace(NAME_FILLERS, "");
  // "plumbing business" names itself "Plumbing", not "Plumbing Business".
  // eslint-disable-next-line regexp/no-super-linear-move -- bounded goal text (see the note above readGoal)
  if (/\s/.test(core)) core = core.replace(/\s+(?:business|company|firm|venture|project)$/i, "");
  const titled = titleCase(core);
  return place ? `${place} ${titled}` : titled;
}

/**
 * A lookahead that keeps the trade words of `subject` before a business noun ("repair cafe", "design studio") from
 * being read as verbs: "a bicycle repair cafe in Lyon" repairs no "cafe in Lyon". Elsewhere they are verbs ("we
 * offer studio space").
 */
function notTheSubjectsTrade(subject: string | undefined): string {
  const words = subject?.split(" ") ?? [];
  const trades = words.flatMap((word, i) => (i + 1 < words.length && BUSINESS_NOUN.test(words[i + 1]!) ? [escapeRegExp(`${word} ${words[i + 1]}`)] : []));
  return trades.length > 0 ? String.raw`(?!(?:${trades.join("|")})(?![\p{L}\p{N}]))` : "";
}

/** True when `word` says when: a day or month, its plural ("Saturdays"), or a WHEN_WORD. */
function saysWhen(word: string): boolean {
  return WHEN_WORD.test(word) || CALENDAR_WORD.test(word) || CALENDAR_WORD.test(word.replace(/s$/i, ""));
}

/** True when `phrase` only says when ("autumn", "Saturday mornings", "every Sunday", "daily 9-5", "7 days a week"). */
function onlySaysWhen(phrase: string): boolean {
  const words = phrase.trim().split(/\s+/);
  return words.some(saysWhen) && words.every((word) => saysWhen(word) || WHEN_JOINING_WORD.test(word));
}

/**
 * The items of a list, with a time split from the item it belongs to put back ("courses every spring" and
 * "autumn" are "courses every spring and autumn"), and without the times that stand alone ("open on Saturdays",
 * "every Sunday"): when something happens is no thing offered, asked for or served.
 */
function listItems(phrase: string): string[] {
  // Item, separator, item, …
  const parts = phrase.split(LIST_SPLIT);
  const items: string[] = [];
  for (let i = 0; i < parts.length; i += 2) {
    const item = parts[i]!;
    const previous = items.at(-1);
    const continuesTime = previous !== undefined && onlySaysWhen(item) && saysWhen(previous.trim().split(/\s+/).at(-1)!);
    if (continuesTime) items[items.length - 1] = `${previous}${parts[i - 1]}${item}`;
    else items.push(item);
  }
  return items.filter((item) => !onlySaysWhen(item.trim().replace(OPEN_OR_CLOSED, "")));
}

function uniqueItems(phrases: string[]): string[] {
  const seen = new Set<string>();
  const items: string[] = [];
  for (const phrase of phrases) {
    for (const raw of listItems(phrase)) {
      const item = raw
        .replace(ARTICLES, "")
        .replace(/^(?:also|other|more|some)\s+/i, "")
        .trim();
      if (item.length < 3 || item.split(" ").length > 8 || seen.has(item.toLowerCase()) || CLAUSE.test(item)) continue;
      seen.add(item.toLowerCase());
      items.push(item);
    }
  }
  return items.slice(0, 6);
}

/** A name as the goal wrote it, white space tidied; never cut (the brief's schema shortens it at a word, if ever). */
function tidyName(name: string): string {
  return name.replace(/\s+/g, " ").trim();
}

/** "sourdough bread" → "Sourdough Bread", leaving short joining words alone. */
export function titleCase(phrase: string): string {
  return phrase
    .split(" ")
    .map((word, i) => (i > 0 && JOINING_WORD.test(word) ? word.toLowerCase() : word.charAt(0).toUpperCase() + word.slice(1)))
    .join(" ");
}

/** "sourdough bread" → "Sourdough bread". */
export function sentenceCase(phrase: string): string {
  return phrase.charAt(0).toUpperCase() + phrase.slice(1);
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
