/**
 * The fixed words every generated site and book is built with (its skip
 * link, its 404 page, the name of its navigation, a book's contents and
 * chapter numbers), in the languages the offline writer reads goals in
 * (the languages of its grammar words, see goal-language.ts) and in Arabic,
 * Hebrew, Japanese, Korean, Russian, Greek and Chinese (Simplified or
 * Traditional, by the tag's script or region). A site or book in any other
 * language gets the English ones, marked as English.
 */
export interface InterfaceWords {
  /** The link past the header to the page's `main`. */
  skipToContent: string;
  /** The accessible name of a site's main navigation. */
  mainNavigation: string;
  /** The 404 page's title. */
  notFound: string;
  /** The 404 page's description, `{name}` the site's name. */
  notPartOf: string;
  /** The 404 page's heading. */
  noSuchPage: string;
  /** The 404 page's text. */
  noPageHere: string;
  /** The 404 page's link home. */
  goHome: string;
  /** A book's table of contents, and the reader's link back to it. */
  contents: string;
  /** The heading of an EPUB's landmarks (a list reading systems use, not shown). */
  landmarks: string;
  /** The landmarks' names of a book's cover, title page and first chapter. */
  cover: string;
  titlePage: string;
  startOfContent: string;
  /** The reader's link to the EPUB file. */
  downloadEpub: string;
  /** The accessible name of the reader's links to the previous and next chapter. */
  chapters: string;
  /** A chapter's number above its title, `{n}` the number. */
  chapter: string;
}

const ENGLISH: InterfaceWords = {
  skipToContent: "Skip to content",
  mainNavigation: "Main",
  notFound: "Not found",
  notPartOf: "This page is not part of {name}",
  noSuchPage: "This page does not exist",
  noPageHere: "There is no page at this address. It may have moved, or the link may be mistyped.",
  goHome: "Go to the home page",
  contents: "Contents",
  landmarks: "Landmarks",
  cover: "Cover",
  titlePage: "Title page",
  startOfContent: "Start of content",
  downloadEpub: "Download the EPUB",
  chapters: "Chapters",
  chapter: "Chapter {n}",
};

/** By ISO 639-1 code, as the language detector and the writers give it; Chinese by script as well, see tableKey. */
const TRANSLATIONS: Readonly<Record<string, InterfaceWords>> = {
  en: ENGLISH,
  de: {
    skipToContent: "Zum Inhalt springen",
    mainNavigation: "Hauptmenü",
    notFound: "Nicht gefunden",
    notPartOf: "Diese Seite gehört nicht zur Website {name}",
    noSuchPage: "Diese Seite gibt es nicht",
    noPageHere: "Unter dieser Adresse gibt es keine Seite. Vielleicht wurde sie verschoben, oder der Link ist falsch geschrieben.",
    goHome: "Zur Startseite",
    contents: "Inhalt",
    landmarks: "Orientierungspunkte",
    cover: "Umschlag",
    titlePage: "Titelseite",
    startOfContent: "Beginn des Inhalts",
    downloadEpub: "EPUB herunterladen",
    chapters: "Kapitel",
    chapter: "Kapitel {n}",
  },
  nl: {
    skipToContent: "Naar de inhoud",
    mainNavigation: "Hoofdmenu",
    notFound: "Niet gevonden",
    notPartOf: "Deze pagina hoort niet bij de website {name}",
    noSuchPage: "Deze pagina bestaat niet",
    noPageHere: "Op dit adres staat geen pagina. Misschien is ze verplaatst, of is de link verkeerd getypt.",
    goHome: "Naar de startpagina",
    contents: "Inhoud",
    landmarks: "Oriëntatiepunten",
    cover: "Omslag",
    titlePage: "Titelpagina",
    startOfContent: "Begin van de inhoud",
    downloadEpub: "EPUB downloaden",
    chapters: "Hoofdstukken",
    chapter: "Hoofdstuk {n}",
  },
  fr: {
    skipToContent: "Aller au contenu",
    mainNavigation: "Menu principal",
    notFound: "Page introuvable",
    notPartOf: "Cette page ne fait pas partie du site {name}",
    noSuchPage: "Cette page n’existe pas",
    noPageHere: "Il n’y a aucune page à cette adresse. Elle a peut-être été déplacée, ou le lien est mal saisi.",
    goHome: "Aller à la page d’accueil",
    contents: "Sommaire",
    landmarks: "Repères",
    cover: "Couverture",
    titlePage: "Page de titre",
    startOfContent: "Début du contenu",
    downloadEpub: "Télécharger l’EPUB",
    chapters: "Chapitres",
    chapter: "Chapitre {n}",
  },
  es: {
    skipToContent: "Saltar al contenido",
    mainNavigation: "Menú principal",
    notFound: "Página no encontrada",
    notPartOf: "Esta página no forma parte del sitio {name}",
    noSuchPage: "Esta página no existe",
    noPageHere: "No hay ninguna página en esta dirección. Puede que se haya movido o que el enlace esté mal escrito.",
    goHome: "Ir a la página de inicio",
    contents: "Índice",
    landmarks: "Puntos de referencia",
    cover: "Cubierta",
    titlePage: "Portada",
    startOfContent: "Inicio del contenido",
    downloadEpub: "Descargar el EPUB",
    chapters: "Capítulos",
    chapter: "Capítulo {n}",
  },
  pt: {
    skipToContent: "Ir para o conteúdo",
    mainNavigation: "Menu principal",
    notFound: "Página não encontrada",
    notPartOf: "Esta página não faz parte do site {name}",
    noSuchPage: "Esta página não existe",
    noPageHere: "Não há nenhuma página neste endereço. Pode ter sido movida, ou o link pode estar mal escrito.",
    goHome: "Ir para a página inicial",
    contents: "Índice",
    landmarks: "Pontos de referência",
    cover: "Capa",
    titlePage: "Página de rosto",
    startOfContent: "Início do conteúdo",
    downloadEpub: "Baixar o EPUB",
    chapters: "Capítulos",
    chapter: "Capítulo {n}",
  },
  it: {
    skipToContent: "Vai al contenuto",
    mainNavigation: "Menu principale",
    notFound: "Pagina non trovata",
    notPartOf: "Questa pagina non fa parte del sito {name}",
    noSuchPage: "Questa pagina non esiste",
    noPageHere: "Non c’è nessuna pagina a questo indirizzo. Potrebbe essere stata spostata, oppure il link è scritto male.",
    goHome: "Vai alla pagina iniziale",
    contents: "Indice",
    landmarks: "Punti di riferimento",
    cover: "Copertina",
    titlePage: "Frontespizio",
    startOfContent: "Inizio del contenuto",
    downloadEpub: "Scarica l’EPUB",
    chapters: "Capitoli",
    chapter: "Capitolo {n}",
  },
  ca: {
    skipToContent: "Salta al contingut",
    mainNavigation: "Menú principal",
    notFound: "No s’ha trobat la pàgina",
    notPartOf: "Aquesta pàgina no forma part del lloc {name}",
    noSuchPage: "Aquesta pàgina no existeix",
    noPageHere: "No hi ha cap pàgina en aquesta adreça. Potser s’ha mogut, o l’enllaç està mal escrit.",
    goHome: "Ves a la pàgina d’inici",
    contents: "Índex",
    landmarks: "Punts de referència",
    cover: "Coberta",
    titlePage: "Portada",
    startOfContent: "Inici del contingut",
    downloadEpub: "Baixa l’EPUB",
    chapters: "Capítols",
    chapter: "Capítol {n}",
  },
  sv: {
    skipToContent: "Hoppa till innehållet",
    mainNavigation: "Huvudmeny",
    notFound: "Sidan hittades inte",
    notPartOf: "Den här sidan hör inte till webbplatsen {name}",
    noSuchPage: "Den här sidan finns inte",
    noPageHere: "Det finns ingen sida på den här adressen. Den kan ha flyttats, eller så är länken felskriven.",
    goHome: "Gå till startsidan",
    contents: "Innehåll",
    landmarks: "Orienteringspunkter",
    cover: "Omslag",
    titlePage: "Titelsida",
    startOfContent: "Början av innehållet",
    downloadEpub: "Ladda ner EPUB-filen",
    chapters: "Kapitel",
    chapter: "Kapitel {n}",
  },
  da: {
    skipToContent: "Gå til indholdet",
    mainNavigation: "Hovedmenu",
    notFound: "Siden blev ikke fundet",
    notPartOf: "Denne side hører ikke til webstedet {name}",
    noSuchPage: "Denne side findes ikke",
    noPageHere: "Der er ingen side på denne adresse. Den kan være flyttet, eller linket kan være skrevet forkert.",
    goHome: "Gå til forsiden",
    contents: "Indhold",
    landmarks: "Orienteringspunkter",
    cover: "Omslag",
    titlePage: "Titelside",
    startOfContent: "Start på indholdet",
    downloadEpub: "Hent EPUB-filen",
    chapters: "Kapitler",
    chapter: "Kapitel {n}",
  },
  no: {
    skipToContent: "Gå til innholdet",
    mainNavigation: "Hovedmeny",
    notFound: "Fant ikke siden",
    notPartOf: "Denne siden hører ikke til nettstedet {name}",
    noSuchPage: "Denne siden finnes ikke",
    noPageHere: "Det er ingen side på denne adressen. Den kan være flyttet, eller lenken kan være skrevet feil.",
    goHome: "Gå til forsiden",
    contents: "Innhold",
    landmarks: "Orienteringspunkter",
    cover: "Omslag",
    titlePage: "Tittelside",
    startOfContent: "Starten av innholdet",
    downloadEpub: "Last ned EPUB-filen",
    chapters: "Kapitler",
    chapter: "Kapittel {n}",
  },
  pl: {
    skipToContent: "Przejdź do treści",
    mainNavigation: "Menu główne",
    notFound: "Nie znaleziono strony",
    notPartOf: "Ta strona nie jest częścią witryny {name}",
    noSuchPage: "Ta strona nie istnieje",
    noPageHere: "Pod tym adresem nie ma żadnej strony. Mogła zostać przeniesiona albo link zawiera literówkę.",
    goHome: "Przejdź do strony głównej",
    contents: "Spis treści",
    landmarks: "Punkty orientacyjne",
    cover: "Okładka",
    titlePage: "Strona tytułowa",
    startOfContent: "Początek treści",
    downloadEpub: "Pobierz plik EPUB",
    chapters: "Rozdziały",
    chapter: "Rozdział {n}",
  },
  cs: {
    skipToContent: "Přejít na obsah",
    mainNavigation: "Hlavní nabídka",
    notFound: "Stránka nenalezena",
    notPartOf: "Tato stránka nepatří k webu {name}",
    noSuchPage: "Tato stránka neexistuje",
    noPageHere: "Na této adrese žádná stránka není. Možná byla přesunuta, nebo je odkaz chybně napsaný.",
    goHome: "Přejít na úvodní stránku",
    contents: "Obsah",
    landmarks: "Orientační body",
    cover: "Obálka",
    titlePage: "Titulní strana",
    startOfContent: "Začátek obsahu",
    downloadEpub: "Stáhnout EPUB",
    chapters: "Kapitoly",
    chapter: "Kapitola {n}",
  },
  sk: {
    skipToContent: "Prejsť na obsah",
    mainNavigation: "Hlavná ponuka",
    notFound: "Stránka sa nenašla",
    notPartOf: "Táto stránka nepatrí k webu {name}",
    noSuchPage: "Táto stránka neexistuje",
    noPageHere: "Na tejto adrese nie je žiadna stránka. Možno bola presunutá alebo je odkaz nesprávne napísaný.",
    goHome: "Prejsť na úvodnú stránku",
    contents: "Obsah",
    landmarks: "Orientačné body",
    cover: "Obálka",
    titlePage: "Titulná strana",
    startOfContent: "Začiatok obsahu",
    downloadEpub: "Stiahnuť EPUB",
    chapters: "Kapitoly",
    chapter: "Kapitola {n}",
  },
  hu: {
    skipToContent: "Ugrás a tartalomhoz",
    mainNavigation: "Főmenü",
    notFound: "Az oldal nem található",
    notPartOf: "Ez az oldal nem tartozik a(z) {name} webhelyhez",
    noSuchPage: "Ez az oldal nem létezik",
    noPageHere: "Ezen a címen nincs oldal. Lehet, hogy áthelyezték, vagy elírták a hivatkozást.",
    goHome: "Ugrás a kezdőlapra",
    contents: "Tartalom",
    landmarks: "Tájékozódási pontok",
    cover: "Borító",
    titlePage: "Címlap",
    startOfContent: "A tartalom eleje",
    downloadEpub: "Az EPUB letöltése",
    chapters: "Fejezetek",
    chapter: "{n}. fejezet",
  },
  ro: {
    skipToContent: "Salt la conținut",
    mainNavigation: "Meniu principal",
    notFound: "Pagina nu a fost găsită",
    notPartOf: "Această pagină nu face parte din site-ul {name}",
    noSuchPage: "Această pagină nu există",
    noPageHere: "Nu există nicio pagină la această adresă. Poate a fost mutată sau linkul este scris greșit.",
    goHome: "Mergi la pagina principală",
    contents: "Cuprins",
    landmarks: "Repere",
    cover: "Copertă",
    titlePage: "Pagina de titlu",
    startOfContent: "Începutul conținutului",
    downloadEpub: "Descarcă EPUB-ul",
    chapters: "Capitole",
    chapter: "Capitolul {n}",
  },
  tr: {
    skipToContent: "İçeriğe geç",
    mainNavigation: "Ana menü",
    notFound: "Sayfa bulunamadı",
    notPartOf: "Bu sayfa {name} sitesinin bir parçası değil",
    noSuchPage: "Bu sayfa mevcut değil",
    noPageHere: "Bu adreste bir sayfa yok. Taşınmış olabilir ya da bağlantı yanlış yazılmış olabilir.",
    goHome: "Ana sayfaya git",
    contents: "İçindekiler",
    landmarks: "Yer işaretleri",
    cover: "Kapak",
    titlePage: "Başlık sayfası",
    startOfContent: "İçeriğin başlangıcı",
    downloadEpub: "EPUB dosyasını indir",
    chapters: "Bölümler",
    chapter: "Bölüm {n}",
  },
  id: {
    skipToContent: "Langsung ke konten",
    mainNavigation: "Menu utama",
    notFound: "Halaman tidak ditemukan",
    notPartOf: "Halaman ini bukan bagian dari situs {name}",
    noSuchPage: "Halaman ini tidak ada",
    noPageHere: "Tidak ada halaman di alamat ini. Mungkin halaman sudah dipindahkan, atau tautannya salah ketik.",
    goHome: "Ke beranda",
    contents: "Daftar isi",
    landmarks: "Penanda",
    cover: "Sampul",
    titlePage: "Halaman judul",
    startOfContent: "Awal konten",
    downloadEpub: "Unduh EPUB",
    chapters: "Bab",
    chapter: "Bab {n}",
  },
  tl: {
    skipToContent: "Lumaktaw sa nilalaman",
    mainNavigation: "Pangunahing menu",
    notFound: "Hindi nahanap",
    notPartOf: "Ang pahinang ito ay hindi bahagi ng {name}",
    noSuchPage: "Walang ganitong pahina",
    noPageHere: "Walang pahina sa address na ito. Maaaring inilipat ito, o mali ang pagkakasulat ng link.",
    goHome: "Pumunta sa pangunahing pahina",
    contents: "Mga nilalaman",
    landmarks: "Mga palatandaan",
    cover: "Pabalat",
    titlePage: "Pahina ng pamagat",
    startOfContent: "Simula ng nilalaman",
    downloadEpub: "I-download ang EPUB",
    chapters: "Mga kabanata",
    chapter: "Kabanata {n}",
  },
  fi: {
    skipToContent: "Siirry sisältöön",
    mainNavigation: "Päävalikko",
    notFound: "Sivua ei löytynyt",
    notPartOf: "Tämä sivu ei kuulu sivustoon {name}",
    noSuchPage: "Tätä sivua ei ole olemassa",
    noPageHere: "Tässä osoitteessa ei ole sivua. Se on ehkä siirretty, tai linkissä on kirjoitusvirhe.",
    goHome: "Siirry etusivulle",
    contents: "Sisällys",
    landmarks: "Maamerkit",
    cover: "Kansi",
    titlePage: "Nimiösivu",
    startOfContent: "Sisällön alku",
    downloadEpub: "Lataa EPUB",
    chapters: "Luvut",
    chapter: "Luku {n}",
  },
  // Beyond the offline writer's languages: those a model writes sites and books in whose scripts are not Latin.
  ar: {
    skipToContent: "انتقل إلى المحتوى",
    mainNavigation: "القائمة الرئيسية",
    notFound: "غير موجود",
    notPartOf: "هذه الصفحة ليست جزءًا من {name}",
    noSuchPage: "هذه الصفحة غير موجودة",
    noPageHere: "لا توجد صفحة على هذا العنوان. ربما نُقلت، أو ربما كُتب الرابط بشكل خاطئ.",
    goHome: "الانتقال إلى الصفحة الرئيسية",
    contents: "المحتويات",
    landmarks: "المعالم",
    cover: "الغلاف",
    titlePage: "صفحة العنوان",
    startOfContent: "بداية المحتوى",
    downloadEpub: "تنزيل ملف EPUB",
    chapters: "الفصول",
    chapter: "الفصل {n}",
  },
  he: {
    skipToContent: "דילוג לתוכן",
    mainNavigation: "תפריט ראשי",
    notFound: "לא נמצא",
    notPartOf: "דף זה אינו חלק מ־{name}",
    noSuchPage: "הדף הזה לא קיים",
    noPageHere: "אין דף בכתובת הזו. ייתכן שהוא הועבר, או שהקישור הוקלד בטעות.",
    goHome: "מעבר לדף הבית",
    contents: "תוכן העניינים",
    landmarks: "ציוני דרך",
    cover: "כריכה",
    titlePage: "דף שער",
    startOfContent: "תחילת התוכן",
    downloadEpub: "הורדת קובץ EPUB",
    chapters: "פרקים",
    chapter: "פרק {n}",
  },
  ja: {
    skipToContent: "本文へスキップ",
    mainNavigation: "メインメニュー",
    notFound: "ページが見つかりません",
    notPartOf: "このページは{name}のページではありません",
    noSuchPage: "このページは存在しません",
    noPageHere: "このアドレスにはページがありません。移動したか、リンクが間違っている可能性があります。",
    goHome: "ホームページへ",
    contents: "目次",
    landmarks: "ランドマーク",
    cover: "表紙",
    titlePage: "タイトルページ",
    startOfContent: "本文の始まり",
    downloadEpub: "EPUBをダウンロード",
    chapters: "章",
    chapter: "第{n}章",
  },
  ko: {
    skipToContent: "본문으로 건너뛰기",
    mainNavigation: "주 메뉴",
    notFound: "찾을 수 없음",
    notPartOf: "이 페이지는 {name}의 일부가 아닙니다",
    noSuchPage: "이 페이지는 존재하지 않습니다",
    noPageHere: "이 주소에는 페이지가 없습니다. 페이지가 이동되었거나 링크가 잘못 입력되었을 수 있습니다.",
    goHome: "홈페이지로 이동",
    contents: "목차",
    landmarks: "랜드마크",
    cover: "표지",
    titlePage: "속표지",
    startOfContent: "본문 시작",
    downloadEpub: "EPUB 다운로드",
    chapters: "장",
    chapter: "제{n}장",
  },
  ru: {
    skipToContent: "Перейти к содержанию",
    mainNavigation: "Главное меню",
    notFound: "Не найдено",
    notPartOf: "Эта страница не относится к сайту {name}",
    noSuchPage: "Такой страницы нет",
    noPageHere: "По этому адресу нет страницы. Возможно, её перенесли или в ссылке опечатка.",
    goHome: "На главную страницу",
    contents: "Содержание",
    landmarks: "Ориентиры",
    cover: "Обложка",
    titlePage: "Титульная страница",
    startOfContent: "Начало текста",
    downloadEpub: "Скачать EPUB",
    chapters: "Главы",
    chapter: "Глава {n}",
  },
  el: {
    skipToContent: "Μετάβαση στο περιεχόμενο",
    mainNavigation: "Κύριο μενού",
    notFound: "Δεν βρέθηκε",
    notPartOf: "Αυτή η σελίδα δεν ανήκει στον ιστότοπο {name}",
    noSuchPage: "Αυτή η σελίδα δεν υπάρχει",
    noPageHere: "Δεν υπάρχει σελίδα σε αυτή τη διεύθυνση. Ίσως μετακινήθηκε ή ο σύνδεσμος είναι λάθος.",
    goHome: "Μετάβαση στην αρχική σελίδα",
    contents: "Περιεχόμενα",
    landmarks: "Σημεία αναφοράς",
    cover: "Εξώφυλλο",
    titlePage: "Σελίδα τίτλου",
    startOfContent: "Αρχή περιεχομένου",
    downloadEpub: "Λήψη του EPUB",
    chapters: "Κεφάλαια",
    chapter: "Κεφάλαιο {n}",
  },
  "zh-Hans": {
    skipToContent: "跳到主要内容",
    mainNavigation: "主菜单",
    notFound: "找不到页面",
    notPartOf: "此页面不属于{name}",
    noSuchPage: "此页面不存在",
    noPageHere: "此网址没有页面。页面可能已被移动，或者链接有误。",
    goHome: "返回首页",
    contents: "目录",
    landmarks: "地标",
    cover: "封面",
    titlePage: "扉页",
    startOfContent: "正文开始",
    downloadEpub: "下载 EPUB",
    chapters: "章节",
    chapter: "第 {n} 章",
  },
  "zh-Hant": {
    skipToContent: "跳到主要內容",
    mainNavigation: "主選單",
    notFound: "找不到頁面",
    notPartOf: "此頁面不屬於{name}",
    noSuchPage: "此頁面不存在",
    noPageHere: "此網址沒有頁面。頁面可能已被移動，或者連結有誤。",
    goHome: "返回首頁",
    contents: "目錄",
    landmarks: "地標",
    cover: "封面",
    titlePage: "扉頁",
    startOfContent: "正文開始",
    downloadEpub: "下載 EPUB",
    chapters: "章節",
    chapter: "第 {n} 章",
  },
};

/** Other codes for a language of the table: Norwegian Bokmål and Nynorsk, Filipino, Mandarin. */
const SAME_AS: Readonly<Record<string, string>> = { nb: "no", nn: "no", fil: "tl", cmn: "zh" };

/** The fixed words of a page in `language` (a BCP 47 tag), and the language they are in when it is not the page's. */
export interface PageWords {
  words: InterfaceWords;
  /** "en" when the table has no translation for the page's language, so the words are marked as English; else undefined. */
  otherLanguage?: "en";
}

/** The fixed words for a site or book in `language`: its own, or English for a language the table lacks. */
export function interfaceWords(language: string): PageWords {
  const key = tableKey(subtagsOf(language));
  const words = Object.hasOwn(TRANSLATIONS, key) ? TRANSLATIONS[key] : undefined;
  return words ? { words } : { words: ENGLISH, otherLanguage: "en" };
}

/**
 * True when a page in `language` (a BCP 47 tag) is Chinese in Traditional characters (see chineseScript): its fixed
 * words are, and so are the fonts its stylesheet names (script-fonts.ts).
 */
export function isTraditionalChinese(language: string): boolean {
  return tableKey(subtagsOf(language)) === "zh-Hant";
}

/** A tag's subtags in lower case, written with hyphens or underscores ("zh_TW"). */
function subtagsOf(language: string): string[] {
  return language.trim().toLowerCase().split(/[-_]/);
}

/** The table's key for a tag's subtags: its language's code, and for Chinese, which one code cannot serve, its script. */
function tableKey([primary = "", ...rest]: readonly string[]): string {
  const code = Object.hasOwn(SAME_AS, primary) ? SAME_AS[primary]! : primary;
  if (code !== "zh") return code;
  const singleton = rest.findIndex((subtag) => subtag.length === 1);
  return `zh-${chineseScript(singleton === -1 ? rest : rest.slice(0, singleton))}`;
}

/** The regions whose Chinese is written in Traditional characters: Taiwan, Hong Kong and Macau. */
const TRADITIONAL_REGIONS: ReadonlySet<string> = new Set(["tw", "hk", "mo"]);

/**
 * The script of a Chinese tag's words: its script subtag's ("zh-Hans-TW" is Simplified), else Traditional for the
 * regions that write it and Simplified elsewhere or with no region. Not ICU's likely script, which has Chinese in
 * the US, Britain or Australia ("zh-US") in Traditional, a guess about a community no tag tells us.
 */
function chineseScript(subtags: readonly string[]): "Hans" | "Hant" {
  const script = subtags.find((subtag) => /^[a-z]{4}$/.test(subtag));
  if (script !== undefined) return script === "hant" ? "Hant" : "Hans";
  return subtags.some((subtag) => TRADITIONAL_REGIONS.has(subtag)) ? "Hant" : "Hans";
}

/** `template` with each `{key}` replaced by its value ("Kapitel {n}" → "Kapitel 3"). */
export function filled(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => (key in values ? String(values[key]) : whole));
}
