// Preloaded (`--import`) into the child processes tests start: when the test process dies (a Jest
// timeout, a killed run), the child exits too, instead of living on as an orphan worker that keeps
// claiming runs and eating a shared machine's CPU. A check a second (signal 0 to the parent: no
// signal is sent, only its existence checked) is enough; a SIGSTOPped child checks again once
// continued, and the timer never keeps the child alive.
const parent = process.ppid;
setInterval(() => {
  try {
    process.kill(parent, 0);
  } catch {
    process.exit(70);
  }
}, 1_000).unref();
