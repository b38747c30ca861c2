/** The sign-in limiter's fixed windows: sign-in attempts per 15 minutes, sign-ups per hour. */
export const SIGN_IN_WINDOW_S = 900;
export const SIGN_UP_WINDOW_S = 3600;

/**
 * Counts restart at a window's edge, so a test that counts across one sees
 * too few (a CI run at 22:59:5x UTC let an eleventh sign-up through, another
 * at 09:14:5x an eleventh sign-in). Within a few seconds of the edge, wait
 * for the next window to begin.
 */
export async function wellInsideWindow(seconds: number, marginMs = 12_000): Promise<void> {
  const left = seconds * 1000 - (Date.now() % (seconds * 1000));
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 100));
}
