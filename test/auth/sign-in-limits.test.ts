import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient, signUp } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { SIGN_IN_WINDOW_S, SIGN_UP_WINDOW_S, wellInsideWindow } from "../support/limit-windows.js";

const code = (e: unknown) => (e instanceof ConnectError ? e.code : "ok");

/** Signs in as if from `address` (the test's socket is a trusted proxy that names the client). */
function signInFrom(app: TestApp, address: string, email: string, password: string): Promise<Code | "ok"> {
  return consoleClient(app.url)
    .signIn({ email, password }, { headers: { "x-forwarded-for": address } })
    .then(() => "ok" as const, code);
}

function signUpFrom(app: TestApp, address: string, email: string): Promise<Code | "ok"> {
  return consoleClient(app.url)
    .signUp({ email, password: "a long enough password" }, { headers: { "x-forwarded-for": address } })
    .then(() => "ok" as const, code);
}

describe("sign-in limits bound guessing without locking the owner out", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_TRUSTED_PROXIES: "127.0.0.1/32,::1", ZERO_SIGNUPS_PER_ADDRESS_PER_HOUR: "10" } });
  });
  afterAll(() => app.close());

  it("a stranger's wrong guesses lock out the stranger's address, not the owner at theirs", async () => {
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    await signUp(app.url, "alice@example.test", "alice's right password");
    const attacker = [];
    for (let i = 0; i < 12; i++) attacker.push(await signInFrom(app, "203.0.113.7", "alice@example.test", `guess ${i}`));
    expect(attacker.slice(0, 10)).toEqual(Array(10).fill(Code.Unauthenticated));
    expect(attacker.slice(10)).toEqual([Code.ResourceExhausted, Code.ResourceExhausted]);
    // Even the right password is refused from the attacking address: it is spent for this window.
    expect(await signInFrom(app, "203.0.113.7", "alice@example.test", "alice's right password")).toBe(Code.ResourceExhausted);
    // The owner, at home, gets in.
    expect(await signInFrom(app, "198.51.100.20", "alice@example.test", "alice's right password")).toBe("ok");
  });

  it("guesses from many addresses are bounded per e-mail, while an address the owner signed in from still works", async () => {
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    await signUp(app.url, "bob@example.test", "bob's right password");
    expect(await signInFrom(app, "198.51.100.30", "bob@example.test", "bob's right password")).toBe("ok");
    const spread = [];
    for (let i = 0; i < 55; i++) spread.push(await signInFrom(app, `203.0.113.${100 + i}`, "bob@example.test", `guess ${i}`));
    expect(spread.filter((c) => c === Code.Unauthenticated)).toHaveLength(50);
    expect(spread.slice(50)).toEqual(Array(5).fill(Code.ResourceExhausted));
    // A new address is refused while the e-mail is under attack, even with the right password...
    expect(await signInFrom(app, "192.0.2.99", "bob@example.test", "bob's right password")).toBe(Code.ResourceExhausted);
    // ...but the address bob signed in from before gets in.
    expect(await signInFrom(app, "198.51.100.30", "bob@example.test", "bob's right password")).toBe("ok");
  });

  it("guesses from one address are bounded across all e-mails, while an owner who signed in from that address still gets in", async () => {
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    await signUp(app.url, "erin@example.test", "erin's right password");
    await signUp(app.url, "frank@example.test", "frank's right password");
    // Erin has signed in from the shared address (an office, say); Frank never has.
    expect(await signInFrom(app, "192.0.2.50", "erin@example.test", "erin's right password")).toBe("ok");
    // One wrong guess at each of 50 e-mails: no pair and no e-mail is near its own limit, the address is at 50.
    const spread = await Promise.all(Array.from({ length: 50 }, (_, i) => signInFrom(app, "192.0.2.50", `target-${i}@example.test`, `guess ${i}`)));
    expect(spread).toEqual(Array(50).fill(Code.Unauthenticated));
    // The 51st e-mail from it is refused, and so is an account that never signed in there, even with its right password...
    expect(await signInFrom(app, "192.0.2.50", "target-50@example.test", "guess 50")).toBe(Code.ResourceExhausted);
    expect(await signInFrom(app, "192.0.2.50", "frank@example.test", "frank's right password")).toBe(Code.ResourceExhausted);
    // ...while another address is not held back by it, and Erin, who knows this one, gets in.
    expect(await signInFrom(app, "192.0.2.51", "target-51@example.test", "guess 51")).toBe(Code.Unauthenticated);
    expect(await signInFrom(app, "192.0.2.50", "erin@example.test", "erin's right password")).toBe("ok");
  });

  it("a success clears that address's failures for the e-mail", async () => {
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    await signUp(app.url, "carol@example.test", "carol's right password");
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 9; i++) expect(await signInFrom(app, "198.51.100.40", "carol@example.test", `typo ${i}`)).toBe(Code.Unauthenticated);
      expect(await signInFrom(app, "198.51.100.40", "carol@example.test", "carol's right password")).toBe("ok");
    }
  });

  it("unknown e-mails are limited exactly like known ones", async () => {
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    const answers = [];
    for (let i = 0; i < 11; i++) answers.push(await signInFrom(app, "203.0.113.8", "nobody@example.test", `guess ${i}`));
    expect(answers.slice(0, 10)).toEqual(Array(10).fill(Code.Unauthenticated));
    expect(answers[10]).toBe(Code.ResourceExhausted);
  });

  it("sign-up is throttled per address, before any password is hashed", async () => {
    await wellInsideWindow(SIGN_UP_WINDOW_S);
    const answers = [];
    for (let i = 0; i < 11; i++) answers.push(await signUpFrom(app, "203.0.113.50", `signup-${i}@example.test`));
    expect(answers.slice(0, 10)).toEqual(Array(10).fill("ok"));
    expect(answers[10]).toBe(Code.ResourceExhausted);
    expect(await signUpFrom(app, "203.0.113.51", "signup-other@example.test")).toBe("ok");
  });

  // Found by a security review: one IPv6 subscriber holds a whole /64, and each of its addresses had limits of its own.
  it("an IPv6 client is one address per /64, for sign-up and for guessing", async () => {
    await wellInsideWindow(SIGN_UP_WINDOW_S);
    const signUps = [];
    for (let i = 0; i < 11; i++) signUps.push(await signUpFrom(app, `2001:db8:1:2::${(i + 1).toString(16)}`, `v6-signup-${i}@example.test`));
    expect(signUps.slice(0, 10)).toEqual(Array(10).fill("ok"));
    expect(signUps[10]).toBe(Code.ResourceExhausted);
    // Written in full, and another /64 of the same /48.
    expect(await signUpFrom(app, "2001:0DB8:0001:0002:aaaa:bbbb:cccc:dddd", "v6-signup-full@example.test")).toBe(Code.ResourceExhausted);
    expect(await signUpFrom(app, "2001:db8:1:3::1", "v6-signup-next@example.test")).toBe("ok");

    await wellInsideWindow(SIGN_IN_WINDOW_S);
    await signUp(app.url, "dana@example.test", "dana's right password");
    const guesses = [];
    for (let i = 0; i < 12; i++) guesses.push(await signInFrom(app, `2001:db8:9:9:${(i + 1).toString(16)}::1`, "dana@example.test", `guess ${i}`));
    expect(guesses.slice(0, 10)).toEqual(Array(10).fill(Code.Unauthenticated));
    expect(guesses.slice(10)).toEqual([Code.ResourceExhausted, Code.ResourceExhausted]);
    expect(await signInFrom(app, "2001:db8:9:a::1", "dana@example.test", "dana's right password")).toBe("ok");
  });
});

describe("X-Forwarded-For counts only from ZERO_TRUSTED_PROXIES", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("without trusted proxies a client cannot pick its own address to dodge the limit", async () => {
    await signUp(app.url, "dave@example.test", "dave's right password");
    for (let i = 0; i < 10; i++) expect(await signInFrom(app, `203.0.113.${i}`, "dave@example.test", `guess ${i}`)).toBe(Code.Unauthenticated);
    expect(await signInFrom(app, "203.0.113.200", "dave@example.test", "another guess")).toBe(Code.ResourceExhausted);
  });

  it("a bad ZERO_TRUSTED_PROXIES stops start-up with a line naming it", async () => {
    await expect(startTestApp({ env: { ZERO_TRUSTED_PROXIES: "10.0.0.0/40" } })).rejects.toThrow(/ZERO_TRUSTED_PROXIES/);
  });
});

describe("X-Forwarded-For behind a chain of trusted proxies is read from the right", () => {
  let app: TestApp;
  beforeAll(async () => {
    // The test's socket (127.0.0.1) is the outer balancer; 10.0.0.0/8 holds the proxies behind it.
    app = await startTestApp({ env: { ZERO_TRUSTED_PROXIES: "127.0.0.1/32,10.0.0.0/8" } });
  });
  afterAll(() => app.close());

  it("the first untrusted hop from the right is the client: what the client writes on the left cannot dodge the limit", async () => {
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    await signUp(app.url, "gina@example.test", "gina's right password");
    // A different spoofed address on the left of each guess; the proxies append the client's real one.
    const chain = (i: number, client = "203.0.113.7") => `198.18.${i}.${1 + Math.floor(Math.random() * 254)}, 10.0.0.5, ${client}`;
    const answers = [];
    for (let i = 0; i < 11; i++) answers.push(await signInFrom(app, chain(i), "gina@example.test", `guess ${i}`));
    expect(answers.slice(0, 10)).toEqual(Array(10).fill(Code.Unauthenticated));
    expect(answers[10]).toBe(Code.ResourceExhausted);
    expect(await signInFrom(app, chain(11), "gina@example.test", "gina's right password")).toBe(Code.ResourceExhausted);
    // The owner, reaching the same proxies from another address, gets in.
    expect(await signInFrom(app, chain(12, "198.51.100.20"), "gina@example.test", "gina's right password")).toBe("ok");
  });

  it("a hop that is not an address ends the walk: the trusted proxy nearest it is the client, whatever lies beyond", async () => {
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    await signUp(app.url, "hank@example.test", "hank's right password");
    const answers = [];
    for (let i = 0; i < 11; i++) {
      answers.push(await signInFrom(app, `198.18.100.${i + 1}, not-an-address, 10.0.0.5`, "hank@example.test", `guess ${i}`));
    }
    expect(answers.slice(0, 10)).toEqual(Array(10).fill(Code.Unauthenticated));
    expect(answers[10]).toBe(Code.ResourceExhausted);
    // They were counted against 10.0.0.5, the proxy that passed the bad hop on.
    expect(await signInFrom(app, "10.0.0.5", "hank@example.test", "hank's right password")).toBe(Code.ResourceExhausted);
  });
});
