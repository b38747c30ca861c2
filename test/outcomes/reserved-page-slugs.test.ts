import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { completion, FakeUpstream, reply } from "../chat/support/fake-upstream.js";
import { answerFor, schemaNameOf, writerModel } from "./support/model-answers.js";
import { httpCompleter, outcomeDeps, readTree, textOf } from "./support/outcome-kit.js";
import { runStages } from "./support/run-stages.js";

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await FakeUpstream.start();
});
afterAll(() => upstream.close());
beforeEach(() => {
  upstream.reset();
  upstream.otherwise(writerModel);
});

/** The scripted model, with its "trips" page called "404" in the brief and the outline, and every button leading to it. */
const answersWith404Page = (exchange: Parameters<typeof writerModel>[0]) => {
  const answer = answerFor(schemaNameOf(exchange.body), exchange.body);
  const text = JSON.stringify(answer)
    .replaceAll(/"slug":"trips?"/gi, '"slug":"404"')
    .replaceAll('"page":"contact"', '"page":"404"');
  return reply(completion(text))(exchange);
};

describe("a page the writer calls 404", () => {
  it("keeps its content under its own file, and the site's not-found page stays the not-found page", async () => {
    upstream.otherwise(answersWith404Page);
    const deps = await outcomeDeps({ chat: httpCompleter(upstream.url), upstream: true });
    const run = await runStages(createStageWork(deps), { planId: "pln_404", outcome: "website", goal: "Sea kayaking trips for beginners" });
    const site = await readTree(deps.artifacts, `sites/${run.outcomes.understand!.project!.slug}/`);

    const pages = [...site.keys()].filter((file) => file.endsWith(".html")).sort();
    expect(pages).toHaveLength(3 + 1);
    const ownFile = pages.find((file) => file !== "404.html" && file !== "index.html" && /404/.test(file));
    expect(ownFile, pages.join(", ")).toBeDefined();
    expect(textOf(site.get(ownFile!)!)).toContain("About");
    expect(textOf(site.get(ownFile!)!)).not.toContain("This page does not exist");
    expect(site.get("404.html")).toContain("This page does not exist");

    // Navigation, buttons and the sitemap all lead to the page, none to the not-found page.
    const home = site.get("index.html")!;
    expect(home).toContain(`href="${ownFile}"`);
    expect(home).toMatch(new RegExp(`<a class="button" href="${ownFile}">`));
    expect(home).not.toContain('href="404.html"');
    expect(site.get("sitemap.xml")).toContain(ownFile);
    expect(site.get("sitemap.xml")).not.toContain("/404.html");
  });
});
