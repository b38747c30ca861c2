import { describe, expect, it } from "vitest";
import { displayWidth, line, printable, printableText } from "../../src/cli/terminal.js";

describe("displayWidth", () => {
  it("counts the columns a terminal gives each character", () => {
    expect(displayWidth("A bike cafe")).toBe(11);
    expect(displayWidth("東京の自転車")).toBe(12);
    expect(displayWidth("ｶﾌｪ")).toBe(3); // halfwidth katakana
    expect(displayWidth("ＡＢ")).toBe(4); // fullwidth Latin
    expect(displayWidth("자전거")).toBe(6);
    expect(displayWidth("🚲")).toBe(2);
    expect(displayWidth("❤️")).toBe(2); // a text-style heart asked to show as emoji
    expect(displayWidth("🇯🇵")).toBe(2);
    expect(displayWidth("Cafe\u0301")).toBe(4); // a combining accent takes no column
    expect(displayWidth("a\u200Bb")).toBe(2); // nor does a zero-width space
    expect(displayWidth("█░✓◆·…")).toBe(6);
  });

  it("never counts an emoji sequence narrower than its parts, so a terminal that does not join them cannot wrap the line", () => {
    expect(displayWidth("👩‍💻")).toBeGreaterThanOrEqual(2);
    expect(displayWidth("👩‍💻")).toBe(4);
  });
});

describe("line", () => {
  it("cuts by columns, not characters, and ends the cut with …", () => {
    const cut = line([["plan ", "dim"], ['"東京の自転車修理カフェのウェブサイト"']], 20, false);
    expect(cut).toBe('plan "東京の自転車…');
    expect(displayWidth(cut)).toBeLessThanOrEqual(20);
  });

  it("leaves a column empty rather than split a wide character", () => {
    expect(line([["ab東京"]], 4, false)).toBe("ab…");
    expect(line([["ab東京"]], 5, false)).toBe("ab東…");
    expect(line([["ab東京"]], 6, false)).toBe("ab東京");
    expect(line([["ab"], ["🚲🚲"]], 5, false)).toBe("ab🚲…");
  });

  it("keeps every line of a frame within the width, whatever the goal is written in", () => {
    const goals = ["東京の自転車修理カフェのウェブサイトを作ってください。営業時間と地図も載せて、温かい雰囲気で。", "🚲".repeat(60), "Cafe\u0301 ".repeat(30)];
    for (const goal of goals) {
      for (let width = 1; width <= 80; width++) {
        const text = line([["plan ", "dim"], ["pln_0123456789", "bold"], ["  website  ", "dim"], [JSON.stringify(goal)]], width, true);
        expect({ goal, width, fits: displayWidth(text.replace(/\x1b\[\d+m/g, "")) <= width }).toEqual({ goal, width, fits: true });
      }
    }
  });
});

describe("text from elsewhere", () => {
  it("is shown, never obeyed: escapes, bells and the bidi controls that would reverse what follows become U+FFFD", () => {
    expect(printable("shop\u001b[31m name\u0007")).toBe("shop\uFFFD[31m name\uFFFD");
    const reversing = "line2 \u202eevil \u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069";
    expect(printable(reversing)).toBe("line2 \uFFFDevil \uFFFD\uFFFD\uFFFD\uFFFD \uFFFD\uFFFD\uFFFD\uFFFD");
    expect(printableText(`${reversing}\n`)).toBe("line2 \uFFFDevil \uFFFD\uFFFD\uFFFD\uFFFD \uFFFD\uFFFD\uFFFD\uFFFD\n");
    // Letters of right-to-left scripts are text, and stay.
    expect(printable("مخبز")).toBe("مخبز");
  });
});
