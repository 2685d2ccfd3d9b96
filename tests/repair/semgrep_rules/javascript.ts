import * as crypto from "crypto";

export function hash(input: string, el: HTMLElement): string {
  // ruleid: js.weak-md5
  const weak = crypto.createHash('md5').update(input).digest("hex");
  // ok: js.weak-md5
  const strong = crypto.createHash("sha512").update(input).digest("hex");
  // ruleid: js.inner-html-assignment
  el.innerHTML = input;
  // ruleid: js.eval-dynamic-code
  const value: number = eval(input);
  return weak + strong + value;
}
