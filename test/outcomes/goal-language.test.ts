import { describe, expect, it } from "vitest";
import { detectGoalLanguage } from "../../src/outcomes/writers/goal-language.js";

/**
 * Goals as people type them to the offline writer: short, often little more
 * than a kind of business and a town. The town's name is in its own
 * language (Utrecht, München, São Paulo), and on a goal of five words the
 * n-gram detector took it for the goal's ("A website for a bicycle repair
 * cafe in Utrecht" was Dutch). Real goals in other languages must still be
 * told apart, whatever town they name.
 */
const ENGLISH = [
  "A website for a bicycle repair cafe in Utrecht",
  "Bicycle repair cafe in Utrecht",
  "a bike shop in utrecht",
  "A bakery called Brood & Zo in Utrecht",
  "A bakery in München",
  "A yoga studio in Zürich",
  "A florist in Düsseldorf",
  "A website for Bäckerei Schmidt in Hamburg",
  "A sushi bar in São Paulo",
  "A website for my bakery in São Paulo",
  "A ramen shop in Kyoto",
  "A tea house in Kyoto",
  "A small bistro in Lyon",
  "A café in Paris",
  "A hotel in Nice",
  "A gallery in Sevilla",
  "A hostel in Kraków",
  "A museum in Göteborg",
  "Plumber in Eindhoven",
  "Piano lessons in Amsterdam",
  "Karate club in Rotterdam",
  "Dog walking in Antwerpen",
  "Vegan restaurant Berlin",
  "We need a site for our community garden in Leeds",
];

const OTHER: [language: string, goal: string][] = [
  ["de", "Eine Webseite für meine Bäckerei in München"],
  ["de", "Ein Fahrradladen in Utrecht"],
  ["de", "Bäckerei in Hamburg mit Brot und Kuchen"],
  ["de", "Webseite für unseren Sportverein in Köln"],
  ["de", "Bäcker in Berlin"],
  ["fr", "Un site pour ma boulangerie à Lyon"],
  ["fr", "Un café à Paris"],
  ["fr", "Site web pour un atelier de réparation de vélos à Utrecht"],
  ["es", "Una página web para mi panadería en Madrid"],
  ["es", "Un bar de tapas en Sevilla"],
  ["es", "Sitio web para un taller de bicicletas en Utrecht"],
  ["nl", "Een website voor mijn bakkerij in Utrecht"],
  ["nl", "Een fietsenmaker in Utrecht"],
  ["nl", "Website voor een fietsreparatiecafé in Utrecht"],
  ["nl", "Kapsalon in Groningen met online afspraken"],
  ["pt", "Um site para a minha padaria em São Paulo"],
  ["it", "Un sito per la mia pasticceria a Roma"],
  ["ja", "京都の和菓子屋のウェブサイトを作ってください"],
  ["ja", "自転車修理カフェのサイト"],
  // Numbers in a script written without spaces: the whole goal is one "word", and it was dropped with its digits (English).
  ["ja", "東京の小さなラーメン屋「麺屋はなび」のウェブサイトを作ってください。営業時間は11時から22時まで、電話番号は03-1234-5678です。"],
  ["zh", "为我在上海的茶馆“清风茶舍”做一个网站，提供绿茶和点心。营业时间每天10点到22点"],
  // An e-mail address or a link written against the words of such a goal: the goal is no "word" of an address (English).
  ["ja", "「珈琲館みどり」のウェブサイトを作ってください。京都の小さな喫茶店です。電話は075-123-4567、メールはinfo@midori-coffee.jpです。"],
  ["ja", "「珈琲館みどり」のウェブサイトを作ってください。詳しくはhttps://midori-coffee.jp/menuをご覧ください。"],
  ["zh", "为我在成都的花店“绿意花坊”做一个网站，出售鲜花和绿植。电话028-8765-4321，邮箱info@lv.cn，欢迎光临。"],
  ["ko", "부산에 있는 작은 빵집 「봄날」의 웹사이트를 만들어 주세요. 문의는 hello@bomnal.kr로 해 주세요."],
  ["ar", "موقع لمخبز صغير في القاهرة يبيع الخبز البلدي والكعك"],
  ["ar", "موقع لمخبز في القاهرة"],
  ["zh", "为我在上海的小咖啡馆做一个网站，出售手冲咖啡和蛋糕"],
  // Chinese in Traditional characters, as Taiwan and Hong Kong write it: its fixed words and fonts follow the tag.
  ["zh-Hant", "幫我做一個台北咖啡店的網站，我們賣手沖咖啡和甜點"],
  ["zh-Hant", "為我在香港的茶館「清風茶舍」做一個網站，提供綠茶和點心。營業時間每天10點到22點"],
  ["zh", "帮我做一个北京咖啡店的网站，我们卖手冲咖啡和甜点"],
  ["ru", "Сайт для пекарни в Москве"],
  ["he", "אתר למאפייה בתל אביב"],
  ["sv", "En webbplats för mitt bageri i Malmö"],
  ["hu", "Egy weboldal a pékségemnek Budapesten"],
];

describe("the offline writer's language detection on short goals", () => {
  it.each(ENGLISH)("English: %s", async (goal) => {
    expect((await detectGoalLanguage(goal)).tag).toBe("en");
  });

  it.each(OTHER)("%s: %s", async (language, goal) => {
    expect(await detectGoalLanguage(goal)).toEqual({ tag: language, detected: true });
  });

  // The documented limit: nothing tells a bare noun and a town apart, so in English letters it is English
  // (the offline writer's copy is English either way); a letter English never uses keeps the other language.
  it("reads a bare noun and a town as English unless its letters say otherwise", async () => {
    expect((await detectGoalLanguage("Tandarts in Utrecht")).tag).toBe("en");
    expect((await detectGoalLanguage("Friseur in Berlin")).tag).toBe("en");
    expect((await detectGoalLanguage("Bäcker in Berlin")).tag).toBe("de");
  });

  // One character over and over, or a few in a row, the n-grams cannot place; their script still says they are not English.
  it.each([
    ["zh-Hant", "a website word and a name of one character, 100 times", `網站「${"麵".repeat(100)}」`],
    ["zh", "one character, 2,000 times", "字".repeat(2000)],
    ["zh", "one word", "网站"],
    ["zh-Hant", "one word in Traditional characters", "網站"],
    ["ja", "a Kanji character, 30 times, and a Hiragana letter", `${"字".repeat(30)}の`],
    ["ko", "one Hangul syllable, 40 times", "가".repeat(40)],
  ])("%s, by its script, when the n-grams cannot tell: %s", async (language, _description, goal) => {
    expect((await detectGoalLanguage(goal)).tag).toBe(language);
  });

  // Most characters are the same in both scripts; a goal with none of those that differ is read as Simplified, the more common.
  it("reads a Chinese goal of characters both scripts share as Simplified", async () => {
    expect((await detectGoalLanguage("北京的咖啡和甜品")).tag).toBe("zh");
  });

  // A name in characters that look Traditional (學, 讀書) leaves a goal with Kana or Hangul Japanese or Korean.
  it("keeps Japanese and Korean goals whose Kanji or Hanja look Traditional", async () => {
    expect(await detectGoalLanguage("東京の書店「夜學堂」のウェブサイトを作ってください。")).toEqual({ tag: "ja", detected: true });
    expect(await detectGoalLanguage("서울에 있는 작은 서점 「讀書房」의 웹사이트를 만들어 주세요.")).toEqual({ tag: "ko", detected: true });
  });
});
