import type { PageContent, Section, SiteOutline, WebsiteBrief } from "../content.js";
import { documentStart, escapeHtml, html, join, languageMark, languageTag, type Html } from "../html.js";
import { filled, interfaceWords, type PageWords } from "../interface-words.js";
import { shorten } from "../json-schema.js";
import { stylesheet, THEMES, type Theme } from "./themes.js";
import { asciiHyphenated, cutSlug, hyphenated } from "../projects.js";
import { ART_MOTIFS, generatedArt, givenAlt, isEnglish, withName } from "./hero-art.js";
import { EMAIL_ADDRESSES, endSentence } from "../../strings.js";
import { UNNAMED_SITE } from "../writers/writer.js";

/** A built site: file name → contents. Flat, with relative links, so it works under any base path. */
export type SiteFiles = Map<string, string>;

/**
 * Renders a static site: one HTML file per page, one stylesheet. Semantic
 * landmarks, a skip link, one h1 per page, headings in order, `aria-current`
 * in the navigation, no script, no external request of any kind.
 */
/**
 * Every file of a site. `copyLanguage` is the language of the writer's own
 * words when it differs from the site's (the offline writer's English on an
 * Arabic goal's site): those words are marked with their own `lang` and
 * `dir`, so they read in the right direction and a screen reader speaks them
 * in the right voice, while the page, and the names taken from the goal,
 * keep the site's.
 */
export function renderSite(brief: WebsiteBrief, outline: SiteOutline, pages: readonly PageContent[], siteUrl?: string, copyLanguage?: string): SiteFiles {
  const theme = THEMES[brief.tone] ?? THEMES.professional;
  const lang = languageTag(brief.language);
  const copy = copyMarker(lang, copyLanguage, brief.name);
  const fixed = interfaceWords(lang);
  // The writer was shown the outline's slugs; a link that names a page by its title or navigation label means it too.
  const pageNamed = pageFinder((["slug", "title", "navLabel"] as const).flatMap((field) => outline.pages.map((p) => [p[field], p.slug] as const)));
  const art = artLabels(brief, theme, copyLanguage);
  const files: SiteFiles = new Map([
    ["style.css", stylesheet(theme, lang)],
    ["favicon.svg", favicon(brief.name, theme)],
    // The hero's picture: decorative on the page (the heading beside it says the same), named in the file for use on its own.
    [HERO_ART, generatedArt(brief.name, theme, { width: 480, height: 480, label: art.hero, lang })],
    // The link preview. Many scrapers (Facebook, LinkedIn, X) only show PNG or JPEG; SVG is what we can make without a rasterizer.
    [SHARE_ART, generatedArt(brief.name, theme, { width: 1200, height: 630, title: brief.name, subtitle: brief.tagline, label: art.share, lang })],
  ]);
  const rendered = outline.pages.filter((_, index) => pages[index]);
  if (siteUrl) {
    files.set(
      "sitemap.xml",
      sitemap(
        siteUrl,
        rendered.map((p) => p.slug),
      ),
    );
    files.set("robots.txt", `User-agent: *\nAllow: /\nSitemap: ${siteUrl}sitemap.xml\n`);
  }
  outline.pages.forEach((page, index) => {
    const content = pages[index];
    if (!content) return;
    const sections = content.sections.map((section, i) => renderSection(section, i, pageNamed, copy));
    const title = pageTitle(page.slug === "index" ? [brief.name, brief.tagline] : [page.title, brief.name]);
    const document = html`${documentStart(lang, title, page.description, shareMeta(brief.name, art.share, lang, title, page.description, siteUrl && pageUrl(siteUrl, page.slug), siteUrl))}
${siteHeader(brief, outline, page.slug, fixed, copy)}
<main id="main">
${join(sections, "\n")}
</main>
${siteFooter(brief, copy)}
</body>
</html>
`;
    files.set(fileFor(page.slug), document.value);
  });
  files.set(NOT_FOUND_PAGE, notFoundPage(brief, lang, outline, fixed, copy).value);
  return files;
}

/** The generated hero picture and the link-preview picture every site carries. */
export const HERO_ART = "hero.svg";
export const SHARE_ART = "og.svg";

/** The page a visitor gets for a URL the site does not have; the route serves it with status 404. */
const NOT_FOUND_SLUG = "404";
export const NOT_FOUND_PAGE = fileFor(NOT_FOUND_SLUG);

/** The site's own 404 page: same header, theme and footer, a link home, in the site's language where interface-words.ts has it. */
function notFoundPage(brief: WebsiteBrief, lang: string, outline: SiteOutline, fixed: PageWords, copy: CopyMarker): Html {
  const { words, otherLanguage } = fixed;
  const description = endSentence(filled(words.notPartOf, { name: brief.name }));
  return html`${documentStart(lang, pageTitle([words.notFound, brief.name]), description, html`<link rel="icon" href="favicon.svg" type="image/svg+xml">\n`)}
${siteHeader(brief, outline, undefined, fixed, copy)}
<main id="main"${languageMark(otherLanguage)}>
<section class="hero" aria-labelledby="section-1">
<div class="wrap">
<h1 id="section-1">${words.noSuchPage}</h1>
<p class="lead">${words.noPageHere}</p>
<p class="more"><a class="button" href="index.html">${words.goHome}</a></p>
</div>
</section>
</main>
${siteFooter(brief, copy)}
</body>
</html>
`;
}

/** The header every page shares, the current page marked in its navigation; its links are the writer's words, marked by `copy`. */
function siteHeader(brief: WebsiteBrief, outline: SiteOutline, current: string | undefined, fixed: PageWords, copy: CopyMarker = NO_MARKS): Html {
  const nav = outline.pages.map(
    (p) => html`<li><a href="${fileFor(p.slug)}"${p.slug === current ? html` aria-current="page"` : html``}>${p.navLabel}</a></li>`,
  );
  return html`<header class="site-header">
<div class="wrap">
<a class="brand" href="index.html"${copy.of(brief.name)}>${brief.name}</a>
<nav class="site-nav" aria-label="${fixed.words.mainNavigation}"${languageMark(fixed.otherLanguage)}>
<ul${copy.attrs}>${nav}</ul>
</nav>
</div>
</header>`;
}

/** The footer every page shares. The \u00B7 is a middle dot, escaped so the server bundle stays ASCII (see src/build.ts). */
function siteFooter(brief: WebsiteBrief, copy: CopyMarker = NO_MARKS): Html {
  return html`<footer class="site-footer">
<div class="wrap">
<p><span${copy.of(brief.name)}>${brief.name}</span> \u00B7 <span${copy.of(brief.tagline)}>${brief.tagline}</span></p>
</div>
</footer>`;
}

/** The address a page is published at: the home page is the site's root. */
function pageUrl(siteUrl: string, slug: string): string {
  return slug === "index" ? siteUrl : `${siteUrl}${fileFor(slug)}`;
}

/**
 * The accessible names of the site's two pictures: the writer's alt text
 * (the pattern and its colours) where it gave one, else the motif on an
 * English site, else the name. The link preview sets the name in type, so
 * its description starts with it; without a description it reads the words
 * set on it, the tagline too when it is in the site's language.
 */
function artLabels(brief: WebsiteBrief, theme: Theme, copyLanguage: string | undefined): { hero: string; share: string } {
  const described = givenAlt(brief.visualAlt, brief.language) ?? (isEnglish(brief.language) ? ART_MOTIFS[theme.id] : undefined);
  if (described) return { hero: described, share: withName(brief.name, described) };
  const taglineInLanguage = copyLanguage === undefined || languageTag(copyLanguage).toLowerCase() === languageTag(brief.language).toLowerCase();
  return { hero: brief.name, share: taglineInLanguage ? `${brief.name}: ${brief.tagline}` : brief.name };
}

/** Favicon, canonical address, and the Open Graph and Twitter card fields a link preview reads. */
function shareMeta(
  siteName: string,
  imageAlt: string,
  lang: string,
  title: string,
  description: string,
  url: string | undefined,
  siteUrl: string | undefined,
): Html {
  const locale = lang.replace("-", "_");
  // og:image must be an absolute address, so it is only there when the site knows where it is published.
  const image = siteUrl
    ? html`<meta property="og:image" content="${siteUrl}${SHARE_ART}">
<meta property="og:image:type" content="image/svg+xml">
<meta property="og:image:width" content="1200">
<meta property="og:image:height" content="630">
<meta property="og:image:alt" content="${imageAlt}">
<meta name="twitter:image" content="${siteUrl}${SHARE_ART}">
<meta name="twitter:image:alt" content="${imageAlt}">
`
    : html``;
  return html`<link rel="icon" href="favicon.svg" type="image/svg+xml">
${url ? html`<link rel="canonical" href="${url}">\n<meta property="og:url" content="${url}">\n` : html``}<meta property="og:type" content="website">
<meta property="og:site_name" content="${siteName}">
<meta property="og:title" content="${title}">
<meta property="og:description" content="${description}">
<meta property="og:locale" content="${locale}">
${image}<meta name="twitter:card" content="${siteUrl ? "summary_large_image" : "summary"}">
<meta name="twitter:title" content="${title}">
<meta name="twitter:description" content="${description}">
`;
}

/** Every page of the site, for search engines (sitemaps.org 0.9). */
function sitemap(siteUrl: string, slugs: readonly string[]): string {
  const urls = slugs.map((slug) => html`<url><loc>${pageUrl(siteUrl, slug)}</loc></url>`);
  return html`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${join(urls, "\n")}
</urlset>
`.value;
}

/**
 * The site's icon: its first letter (or a dot) on the theme's accent, in a
 * rounded square. Text in SVG, so any script's letter works without a font file.
 */
function favicon(name: string, theme: Theme): string {
  const letter = [...name.trim()].find((c) => /[\p{L}\p{N}]/u.test(c)) ?? "\u00B7";
  return html`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">
<rect width="64" height="64" rx="14" fill="${theme.colors.accent}"/>
<text x="32" y="44" text-anchor="middle" font-size="36" font-family="${theme.headingFont}" fill="${theme.colors.onAccent}">${letter.toUpperCase()}</text>
</svg>
`.value;
}

/** "Page – Site" when it fits in a tab and a search result (70 characters), else the first part, shortened. */
function pageTitle(parts: [string, string]): string {
  const full = parts.join(" – ");
  if (titleLength(full) <= MAX_TITLE) return full;
  if (titleLength(parts[0]) <= MAX_TITLE) return parts[0];
  // Whole words within the limit, their escapes included.
  let title = parts[0];
  for (let max = MAX_TITLE; titleLength(title) > MAX_TITLE && max > 1; max--) title = shorten(parts[0], max);
  return title;
}

/** Most characters of a `<title>`, as html-validate counts them: escaped, so `"` is the six of `&quot;`. */
const MAX_TITLE = 70;
const titleLength = (text: string) => [...escapeHtml(text)].length;

/**
 * Lowercase, hyphenated with accents folded as a project's slug is but in ASCII alone, safe as a file name, at most
 * 40 characters and never cut mid-word. Never the not-found page's: the writer's "404" is "page-404", in the
 * navigation and links alike.
 */
export function pageSlug(raw: string): string {
  const slug = cutSlug(asciiHyphenated(raw.replace(/\.html?$/i, "")), 40) || "page";
  return slug === NOT_FOUND_SLUG ? `page-${slug}` : slug;
}

/**
 * Finds the page a name means, from `(name, slug)` pairs in order of trust (the first pair with a name wins). Names
 * are compared as slugs are made, but letters of any script are kept: "关于" and "日本語", both "page" as slugs,
 * stay two names, so a link names the page it means or none, never another page that happened to share a slug.
 */
export function pageFinder(named: Iterable<readonly [name: string, slug: string]>): (name: string) => string | undefined {
  const slugs = new Map<string, string>();
  for (const [name, slug] of named) {
    const key = pageNameKey(name);
    if (key !== "" && !slugs.has(key)) slugs.set(key, slug);
  }
  return (name) => slugs.get(pageNameKey(name));
}

/** A page name as `pageSlug` reads it when it is in Latin letters and digits, else hyphenated with any script's letters kept. */
function pageNameKey(name: string): string {
  const key = hyphenated(name.replace(/\.html?$/i, ""));
  return /^[a-z0-9-]*$/.test(key) && key !== "" ? pageSlug(name) : key;
}

function fileFor(slug: string): string {
  return `${slug}.html`;
}

/** Marks the writer's own words with their language where it is not the page's; see `renderSite`. */
interface CopyMarker {
  /** ` lang="…" dir="…"` for an element that holds only the writer's words, or nothing. */
  attrs: Html;
  /** The same for a text that may be the site's name: one from the goal keeps the page's language, the writer's placeholder is its copy. */
  of(text: string): Html;
}

const NO_MARKS: CopyMarker = { attrs: html``, of: () => html`` };

function copyMarker(lang: string, copyLanguage: string | undefined, name: string): CopyMarker {
  if (copyLanguage === undefined) return NO_MARKS;
  const tag = languageTag(copyLanguage);
  if (tag.toLowerCase() === lang.toLowerCase()) return NO_MARKS;
  const attrs = languageMark(tag);
  const nameFromGoal = name !== UNNAMED_SITE;
  return { attrs, of: (text) => (nameFromGoal && text.trim() === name.trim() ? html`` : attrs) };
}

function renderSection(section: Section, index: number, pageNamed: (name: string) => string | undefined, copy: CopyMarker = NO_MARKS): Html {
  // The first section is the page's hero and holds its only h1, whatever kind the writer gave it.
  const kind = index === 0 ? "hero" : section.kind === "hero" ? "text" : section.kind;
  const id = `section-${index + 1}`;
  const paragraphs = section.paragraphs.filter((p) => p.trim() !== "");
  const target = pageNamed(section.link.page);
  const link =
    section.link.label.trim() !== "" && target !== undefined
      ? html`<p class="more"><a class="button" href="${fileFor(target)}">${section.link.label}</a></p>`
      : html``;
  const items = section.items.filter((item) => item.title.trim() !== "");
  switch (kind) {
    case "hero":
      return html`<section class="hero" aria-labelledby="${id}">
<div class="wrap hero-grid">
<div>
<h1 id="${id}"${copy.of(section.heading)}>${section.heading}</h1>
<div${copy.attrs}>
${paragraphs.map((p, i) => (i === 0 ? html`<p class="lead">${p}</p>` : html`<p>${p}</p>`))}
${link}
</div>
</div>
<img class="hero-art" src="${HERO_ART}" alt="" width="480" height="480">
</div>
</section>`;
    case "features":
      return html`<section class="section" aria-labelledby="${id}"${copy.attrs}>
<div class="wrap">
<h2 id="${id}">${section.heading}</h2>
${paragraphs.map((p) => html`<p>${p}</p>`)}
${items.length > 0 ? html`<ul class="cards">${items.map((item) => html`<li class="card"><h3>${item.title}</h3><p>${item.text}</p></li>`)}</ul>` : html``}
${link}
</div>
</section>`;
    case "list":
      // A menu or price list: one line per item, its description beneath, no cards.
      return itemSection(id, section.heading, paragraphs, items, link, { list: "ul", className: "lines" }, copy);
    case "timeline":
      return itemSection(id, section.heading, paragraphs, items, link, { list: "ol", className: "timeline" }, copy);
    case "steps":
      return itemSection(id, section.heading, paragraphs, items, link, { list: "ol", className: "steps", alt: true }, copy);
    case "faq":
      return html`<section class="section faq" aria-labelledby="${id}"${copy.attrs}>
<div class="wrap">
<h2 id="${id}">${section.heading}</h2>
${paragraphs.map((p) => html`<p>${p}</p>`)}
${items.map((item) => html`<details><summary>${item.title}</summary><p>${item.text}</p></details>`)}
${link}
</div>
</section>`;
    case "cta":
      return html`<section class="section cta-band" aria-labelledby="${id}"${copy.attrs}>
<div class="wrap">
<h2 id="${id}">${section.heading}</h2>
${paragraphs.map((p) => html`<p>${p}</p>`)}
${link}
</div>
</section>`;
    case "contact":
      return html`<section class="section" aria-labelledby="${id}"${copy.attrs}>
<div class="wrap">
<h2 id="${id}">${section.heading}</h2>
<div class="contact-card">
${paragraphs.map((p) => html`<p>${linkContacts(p)}</p>`)}
${items.map((item) => html`<p><strong>${item.title}</strong> ${linkContacts(item.text)}</p>`)}
</div>
${link}
</div>
</section>`;
    default:
      return html`<section class="section" aria-labelledby="${id}"${copy.attrs}>
<div class="wrap">
<h2 id="${id}">${section.heading}</h2>
${paragraphs.map((p) => html`<p>${p}</p>`)}
${items.map((item) => html`<h3>${item.title}</h3><p>${item.text}</p>`)}
${link}
</div>
</section>`;
  }
}

/** A section whose items are a list of headed lines: a menu ("lines"), a timeline or numbered steps. */
function itemSection(
  id: string,
  heading: string,
  paragraphs: readonly string[],
  items: readonly { title: string; text: string }[],
  link: Html,
  layout: { list: "ul" | "ol"; className: string; alt?: boolean },
  copy: CopyMarker,
): Html {
  const entries = items.map((item) => html`<li><h3>${item.title}</h3><p>${item.text}</p></li>`);
  const list =
    items.length === 0
      ? html``
      : layout.list === "ul"
        ? html`<ul class="${layout.className}">${entries}</ul>`
        : html`<ol class="${layout.className}">${entries}</ol>`;
  return html`<section class="section${layout.alt ? " alt" : ""}" aria-labelledby="${id}"${copy.attrs}>
<div class="wrap">
<h2 id="${id}">${heading}</h2>
${paragraphs.map((p) => html`<p>${p}</p>`)}
${list}
${link}
</div>
</section>`;
}

/** Plain text with e-mail addresses turned into `mailto:` links (text escaped, address checked). */
function linkContacts(text: string): Html {
  const parts: Html[] = [];
  let last = 0;
  for (const match of text.matchAll(EMAIL_ADDRESSES)) {
    parts.push(html`${text.slice(last, match.index)}`, html`<a href="mailto:${match[0]}">${match[0]}</a>`);
    last = match.index + match[0].length;
  }
  parts.push(html`${text.slice(last)}`);
  return join(parts);
}
