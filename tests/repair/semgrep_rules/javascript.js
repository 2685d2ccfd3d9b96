const crypto = require("crypto");

function run(userCode, el, data) {
  // ruleid: js.eval-dynamic-code
  eval(userCode);
  // ok: js.eval-dynamic-code
  eval("1 + 1");
  // ruleid: js.eval-dynamic-code
  const f = new Function("a", userCode);
  // ok: js.eval-dynamic-code
  JSON.parse(data);
  // ok: js.eval-dynamic-code
  const r = interpreter.eval(userCode);

  // ruleid: js.weak-md5
  const h = crypto.createHash("md5");
  // ok: js.weak-md5
  const s = crypto.createHash("sha256");

  // ruleid: js.inner-html-assignment
  el.innerHTML = data;
  // ok: js.inner-html-assignment
  el.innerHTML = "<b>static</b>";
  // ok: js.inner-html-assignment
  el.textContent = data;
  // ruleid: js.inner-html-assignment
  el.innerHTML = `<b>${data}</b>`;

  // ruleid: js.insecure-random-token
  const sessionToken = Math.random().toString(36);
  // ok: js.insecure-random-token
  const jitter = Math.random() * 100;
  return [f, h, s, r, sessionToken, jitter];
}

module.exports = { run };
