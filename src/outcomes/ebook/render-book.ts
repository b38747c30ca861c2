import { createHash } from "node:crypto";
import type { BookContent, Chapter, EbookBrief } from "../content.js";
import { documentStart, html, join, languageMark, languageTag, textDirection, type Html } from "../html.js";
import { bookScriptFontsCss } from "../script-fonts.js";
import { filled, interfaceWords } from "../interface-words.js";
import { zip } from "../zip.js";
import { generatedArt, givenAlt, isEnglish, withName } from "../website/hero-art.js";
import { THEMES } from "../website/themes.js";
import { NOT_FOUND_PAGE } from "../website/render-site.js";

export interface BookMeta {
  /** Seeds the book's stable identifier, so a rebuilt book is the same publication. */
  planId: string;
  /** `dcterms:modified`; the time the book was assembled. */
  modified: Date;
}

const chapterFile = (index: number, ext: string) => `chapter-${String(index + 1).padStart(2, "0")}.${ext}`;

/** The book's cover: the site hero's generated pattern in the tone's theme, with the title, subtitle and author (a line of their own) set on it. */
export function bookCover(brief: EbookBrief): string {
  const theme = THEMES[brief.tone] ?? THEMES.warm;
  return generatedArt(brief.title, theme, {
    width: 600,
    height: 900,
    title: brief.title,
    subtitle: brief.subtitle,
    byline: brief.author,
    label: coverAlt(brief),
    lang: brief.language,
  });
}

/**
 * The cover's alt text: the writer's description (title first unless it
 * says it already); without one, "Cover of …" in an English book, and in
 * any other the title and author alone, in the book's own language.
 */
export function coverAlt(brief: EbookBrief): string {
  const byline = brief.author.trim();
  const given = givenAlt(brief.coverAlt, brief.language);
  if (given) return withName(brief.title, given);
  if (isEnglish(brief.language)) return byline ? `Cover of ${brief.title} by ${byline}` : `Cover of ${brief.title}`;
  return byline ? `${brief.title} \u2014 ${byline}` : brief.title;
}

/**
 * The EPUB 3 file: container, package document, a cover, navigation (EPUB 3
 * nav with landmarks, and an NCX for EPUB 2 readers), a title page and one
 * XHTML file per chapter.
 */
export function renderEpub(brief: EbookBrief, content: BookContent, meta: BookMeta): Uint8Array {
  const lang = languageTag(brief.language);
  const direction = textDirection(lang);
  // The template's own words ("Contents"), in the book's language or marked as the English they are.
  const { words, otherLanguage } = interfaceWords(lang);
  const mark = languageMark(otherLanguage, true);
  const chapters = content.chapters;
  /** A page; `titleMark` marks a title in other words than the book's (the template's English "Contents"). */
  const xhtml = (title: string, body: Html, titleMark: Html = html``) => `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="${lang}" xml:lang="${lang}" dir="${direction}">
<head>
<meta charset="UTF-8"/>
<title${titleMark}>${html`${title}`}</title>
<link rel="stylesheet" type="text/css" href="style.css"/>
</head>
<body>
${body}
</body>
</html>
`;
  const titlePage = xhtml(
    brief.title,
    html`<section epub:type="titlepage" class="titlepage">
<h1>${brief.title}</h1>
<p class="subtitle">${brief.subtitle}</p>
${brief.author.trim() ? html`<p class="author">${brief.author}</p>` : html``}
<p class="blurb">${brief.description}</p>
</section>`,
  );
  const nav = xhtml(
    words.contents,
    html`<nav epub:type="toc" id="toc">
<h1${mark}>${words.contents}</h1>
<ol>
${chapters.map((c, i) => html`<li><a href="${chapterFile(i, "xhtml")}">${c.title}</a></li>\n`)}</ol>
</nav>
<nav epub:type="landmarks" id="landmarks" hidden="hidden">
<h2${mark}>${words.landmarks}</h2>
<ol${mark}>
<li><a epub:type="cover" href="cover.xhtml">${words.cover}</a></li>
<li><a epub:type="titlepage" href="title.xhtml">${words.titlePage}</a></li>
<li><a epub:type="toc" href="nav.xhtml#toc">${words.contents}</a></li>
<li><a epub:type="bodymatter" href="${chapterFile(0, "xhtml")}">${words.startOfContent}</a></li>
</ol>
</nav>`,
    mark,
  );
  const coverPage = xhtml(
    brief.title,
    html`<section epub:type="cover" class="cover">
<img src="cover.svg" alt="${coverAlt(brief)}"/>
</section>`,
  );
  const chapterPages = chapters.map((chapter, _i) =>
    xhtml(
      chapter.title,
      html`<section epub:type="chapter" aria-labelledby="chapter-title">
<h1 id="chapter-title">${chapter.title}</h1>
${chapterBody(chapter)}
</section>`,
    ),
  );

  const id = uuidFrom(meta.planId);
  const modified = meta.modified.toISOString().replace(/\.\d{3}Z$/, "Z");
  // EPUB 2 readers navigate by the NCX; EPUB 3 readers use nav.xhtml and ignore it.
  const ncx = `<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1" xml:lang="${lang}">
<head>
<meta name="dtb:uid" content="urn:uuid:${id}"/>
<meta name="dtb:depth" content="1"/>
<meta name="dtb:totalPageCount" content="0"/>
<meta name="dtb:maxPageNumber" content="0"/>
</head>
<docTitle><text>${html`${brief.title}`}</text></docTitle>
<navMap>
<navPoint id="np-title" playOrder="1"><navLabel><text>${html`${brief.title}`}</text></navLabel><content src="title.xhtml"/></navPoint>
${chapters.map((c, i) => `<navPoint id="np-${i + 1}" playOrder="${i + 2}"><navLabel><text>${html`${c.title}`}</text></navLabel><content src="${chapterFile(i, "xhtml")}"/></navPoint>`).join("\n")}
</navMap>
</ncx>
`;
  const opf = `<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="pub-id" xml:lang="${lang}">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:identifier id="pub-id">urn:uuid:${id}</dc:identifier>
<dc:title>${html`${brief.title}`}</dc:title>
<dc:language>${lang}</dc:language>
${brief.author.trim() ? `<dc:creator>${html`${brief.author}`}</dc:creator>\n` : ""}<dc:description>${html`${brief.description}`}</dc:description>
<dc:publisher>Project Zero</dc:publisher>
<meta property="dcterms:modified">${modified}</meta>
<meta name="cover" content="cover-image"/>
${ACCESSIBILITY_METADATA}</metadata>
<manifest>
<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
<item id="cover-image" href="cover.svg" media-type="image/svg+xml" properties="cover-image"/>
<item id="cover" href="cover.xhtml" media-type="application/xhtml+xml"/>
<item id="style" href="style.css" media-type="text/css"/>
<item id="titlepage" href="title.xhtml" media-type="application/xhtml+xml"/>
${chapters.map((_, i) => `<item id="c${i + 1}" href="${chapterFile(i, "xhtml")}" media-type="application/xhtml+xml"/>`).join("\n")}
</manifest>
<spine toc="ncx"${direction === "rtl" ? ' page-progression-direction="rtl"' : ""}>
<itemref idref="cover"/>
<itemref idref="titlepage"/>
<itemref idref="nav"/>
${chapters.map((_, i) => `<itemref idref="c${i + 1}"/>`).join("\n")}
</spine>
</package>
`;
  const container = `<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles>
<rootfile full-path="EPUB/package.opf" media-type="application/oebps-package+xml"/>
</rootfiles>
</container>
`;
  return zip([
    { name: "mimetype", data: "application/epub+zip", store: true },
    { name: "META-INF/container.xml", data: container },
    { name: "EPUB/package.opf", data: opf },
    { name: "EPUB/nav.xhtml", data: nav },
    { name: "EPUB/toc.ncx", data: ncx },
    { name: "EPUB/cover.svg", data: bookCover(brief) },
    { name: "EPUB/cover.xhtml", data: coverPage },
    { name: "EPUB/title.xhtml", data: titlePage },
    { name: "EPUB/style.css", data: BOOK_CSS + bookScriptFontsCss(lang, BOOK_FONTS, "h1, h2") },
    ...chapterPages.map((page, i) => ({ name: `EPUB/${chapterFile(i, "xhtml")}`, data: page })),
  ]);
}

/** The HTML reader: a contents page with the download link, one page per chapter, one stylesheet, and its own 404 page. */
export function renderReader(brief: EbookBrief, content: BookContent, epubName: string): Map<string, string> {
  const lang = languageTag(brief.language);
  const { words, otherLanguage } = interfaceWords(lang);
  const mark = languageMark(otherLanguage);
  const chapters = content.chapters;
  // A file name in another script is percent-encoded in a link, as any URL is.
  const epubHref = encodeURIComponent(epubName);
  const page = (title: string, body: Html) =>
    html`${documentStart(lang, title, brief.subtitle)}
<header class="book-header"><a href="index.html">${brief.title}</a></header>
<main id="main">
${body}
</main>
<footer class="book-footer"><p><a href="${epubHref}" download${mark}>${words.downloadEpub}</a></p></footer>
</body>
</html>
`.value;
  // The EPUB's cover on the contents page too; decorative there, the heading beside it says the same.
  const files = new Map<string, string>([
    ["style.css", BOOK_CSS + READER_CSS + bookScriptFontsCss(lang, BOOK_FONTS, "h1, h2, .book-header, .chapter-number, .button")],
    ["cover.svg", bookCover(brief)],
  ]);
  files.set(
    "index.html",
    page(
      brief.title,
      html`<section class="titlepage" aria-labelledby="book-title">
<img class="cover-art" src="cover.svg" alt="" width="600" height="900">
<h1 id="book-title">${brief.title}</h1>
<p class="subtitle">${brief.subtitle}</p>
${brief.author.trim() ? html`<p class="author">${brief.author}</p>` : html``}
<p class="blurb">${brief.description}</p>
<p><a class="button" href="${epubHref}" download${mark}>${words.downloadEpub}</a></p>
</section>
<nav aria-labelledby="contents-title">
<h2 id="contents-title"${mark}>${words.contents}</h2>
<ol class="contents">
${chapters.map((c, i) => html`<li><a href="${chapterFile(i, "html")}">${c.title}</a></li>\n`)}</ol>
</nav>`,
    ),
  );
  // Served for a mistyped address under the book, at any depth (its relative links are made absolute then).
  files.set(
    NOT_FOUND_PAGE,
    page(
      `${words.notFound} – ${brief.title}`,
      html`<section class="titlepage" aria-labelledby="not-found-title"${mark}>
<h1 id="not-found-title">${words.noSuchPage}</h1>
<p class="blurb">${words.noPageHere}</p>
<p><a class="button" href="index.html">${words.contents}</a></p>
</section>`,
    ),
  );
  // The pager's arrows point the way the book reads: back is to the right in a right-to-left book.
  // \u2190 and \u2192 are arrows, escaped so the server bundle stays ASCII (see src/build.ts).
  const [back, on] = textDirection(lang) === "rtl" ? ["\u2192", "\u2190"] : ["\u2190", "\u2192"];
  // The arrow stays outside an English mark, so it takes the page's direction and sits at the link's outer end.
  const contents = html`<span${mark}>${words.contents}</span>`;
  chapters.forEach((chapter, i) => {
    const previous =
      i > 0
        ? html`<a rel="prev" href="${chapterFile(i - 1, "html")}">${back} ${chapters[i - 1]!.title}</a>`
        : html`<a href="index.html">${back} ${contents}</a>`;
    const next =
      i < chapters.length - 1
        ? html`<a rel="next" href="${chapterFile(i + 1, "html")}">${chapters[i + 1]!.title} ${on}</a>`
        : html`<a href="index.html">${contents} ${on}</a>`;
    files.set(
      chapterFile(i, "html"),
      page(
        `${chapter.title} – ${brief.title}`,
        html`<article aria-labelledby="chapter-title">
<p class="chapter-number"${mark}>${filled(words.chapter, { n: i + 1 })}</p>
<h1 id="chapter-title">${chapter.title}</h1>
${chapterBody(chapter)}
</article>
<nav class="pager" aria-labelledby="pager-name"><span id="pager-name" hidden${mark}>${words.chapters}</span>${previous} ${next}</nav>`,
      ),
    );
  });
  return files;
}

/** Sections and paragraphs, valid as both HTML and XHTML; untitled sections (and ones repeating the chapter title) get no heading. */
function chapterBody(chapter: Chapter): Html {
  return join(
    chapter.sections.map(
      (section) =>
        html`${section.heading.trim() && section.heading.trim() !== chapter.title.trim() ? html`<h2>${section.heading}</h2>\n` : html``}${section.paragraphs
          .filter((p) => p.trim() !== "")
          .map((p) => html`<p>${p}</p>\n`)}`,
    ),
  );
}

/** An RFC 4122 name-based (version 5 layout) UUID from the plan id. */
function uuidFrom(seed: string): string {
  const bytes = createHash("sha1").update(`project-zero:book:${seed}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * What the book offers a reader who cannot see it, or reads it another way (EPUB Accessibility 1.1, schema.org):
 * text throughout, in the order of the spine, with headings, a table of contents and landmarks; the cover's artwork
 * is not needed to read it (DAISY: cover art sets no visual access mode) and has alt text. No claim of WCAG
 * conformance (`dcterms:conformsTo`): no one has audited a book against it.
 */
const ACCESSIBILITY_METADATA = `<meta property="schema:accessMode">textual</meta>
<meta property="schema:accessModeSufficient">textual</meta>
<meta property="schema:accessibilityFeature">structuralNavigation</meta>
<meta property="schema:accessibilityFeature">tableOfContents</meta>
<meta property="schema:accessibilityFeature">readingOrder</meta>
<meta property="schema:accessibilityFeature">alternativeText</meta>
<meta property="schema:accessibilityHazard">none</meta>
<meta property="schema:accessibilitySummary" xml:lang="en">All text, in reading order, with chapter headings, a table of contents and landmarks. The one image, the cover, has a text description. No flashing, sound or motion.</meta>
`;

const BOOK_FONTS = { body: 'Georgia, "Iowan Old Style", Palatino, serif', heading: '"Helvetica Neue", Arial, sans-serif' };

// Not slanted in the scripts that have no italic (Chinese, Japanese, Korean, Arabic, Hebrew): a reader would fake one by shearing the glyphs.
const BOOK_CSS = `body { font-family: ${BOOK_FONTS.body}; line-height: 1.6; margin: 0 5%; color: #1f1b16; }
h1, h2 { font-family: ${BOOK_FONTS.heading}; line-height: 1.25; }
h1 { font-size: 1.8em; margin: 1.5em 0 .8em; }
h2 { font-size: 1.25em; margin: 1.6em 0 .6em; }
p { margin: 0 0 .9em; text-align: start; }
.titlepage { text-align: center; margin-top: 3em; }
.subtitle { font-size: 1.2em; font-style: italic; text-align: center; }
.subtitle:lang(ja), .subtitle:lang(zh), .subtitle:lang(ko), .subtitle:lang(ar), .subtitle:lang(fa), .subtitle:lang(ur), .subtitle:lang(he), .subtitle:lang(yi) { font-style: normal; }
.author { font-weight: bold; text-align: center; }
.blurb { margin-top: 2em; }
.cover { text-align: center; margin: 0; }
.cover img { max-width: 100%; max-height: 95vh; }
`;

const READER_CSS = `body { max-width: 40rem; margin: 0 auto; padding: 0 1.25rem; background: #fffdf8; font-size: 1.125rem; }
a { color: #7c2d12; text-underline-offset: .2em; }
a:focus-visible { outline: 3px solid #7c2d12; outline-offset: 3px; }
.skip-link { position: absolute; inset-inline-start: .5rem; top: -10rem; }
.skip-link:focus { top: .5rem; background: #1f1b16; color: #fff; padding: .5rem 1rem; }
.book-header { padding: 1rem 0; border-bottom: 1px solid #e7dccb; font-family: ${BOOK_FONTS.heading}; font-weight: bold; }
.book-header a { color: #1f1b16; text-decoration: none; }
.chapter-number { margin: 2.5rem 0 0; color: #5f5246; font-family: ${BOOK_FONTS.heading}; text-transform: uppercase; letter-spacing: .08em; font-size: .85rem; }
.chapter-number + h1 { margin-top: .3rem; }
.contents { padding-inline-start: 1.4rem; }
.contents li { margin: .4rem 0; }
.button { display: inline-block; background: #7c2d12; color: #fff; padding: .7rem 1.3rem; border-radius: 8px; text-decoration: none; font-family: ${BOOK_FONTS.heading}; font-weight: bold; }
.cover-art { display: block; width: min(16rem, 70%); height: auto; margin: 2rem auto 0; box-shadow: 0 6px 24px rgba(31, 27, 22, .2); }
.pager { display: flex; justify-content: space-between; gap: 1rem; flex-wrap: wrap; margin: 3rem 0 1rem; padding-top: 1rem; border-top: 1px solid #e7dccb; }
.book-footer { margin: 2rem 0; color: #5f5246; font-size: .95rem; }
`;
