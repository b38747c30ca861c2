/**
 * WCAG 2 contrast between colours as a browser's computed style writes them:
 * `rgb(…)` / `rgba(…)` (alpha ignored: callers pass opaque colours),
 * `color(srgb r g b)` (what Chromium gives for color-mix()) or `#rrggbb`.
 */
export function contrastRatio(a: string, b: string): number {
  const [lighter, darker] = [luminance(channels(a)), luminance(channels(b))].sort((x, y) => y - x) as [number, number];
  return (lighter + 0.05) / (darker + 0.05);
}

/** The colour as the eye gets it through a CSS `filter: brightness(k)` (what Chromium paints: each sRGB channel times k, clipped). */
export function throughFilter(color: string, filter: string): string {
  const factor = /brightness\(([\d.]+)(%?)\)/.exec(filter);
  if (!factor) return color;
  const k = Number(factor[1]) / (factor[2] ? 100 : 1);
  const [r, g, b] = channels(color).map((channel) => Math.min(255, channel * k));
  return `rgb(${r}, ${g}, ${b})`;
}

/** Every colour written in a computed `background-image` (a gradient's stops). */
export function gradientColors(backgroundImage: string): string[] {
  return backgroundImage.match(/rgba?\([^)]*\)|color\(srgb [^)]*\)/g) ?? [];
}

/** The colour's red, green and blue, 0–255. */
function channels(color: string): [number, number, number] {
  const hex = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(color);
  if (hex) return [hex[1], hex[2], hex[3]].map((part) => Number.parseInt(part!, 16)) as [number, number, number];
  const rgb = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)/.exec(color);
  if (rgb) return [Number(rgb[1]), Number(rgb[2]), Number(rgb[3])];
  const srgb = /^color\(srgb ([\d.]+) ([\d.]+) ([\d.]+)/.exec(color);
  if (srgb) return [Number(srgb[1]) * 255, Number(srgb[2]) * 255, Number(srgb[3]) * 255];
  throw new Error(`not a colour this test reads: ${color}`);
}

function luminance([r, g, b]: [number, number, number]): number {
  const linear = (channel: number) => {
    const value = channel / 255;
    return value <= 0.04045 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
}
