// A jest reporter that ends the run with its slowest test files and tests, so the CI log shows
// where the time goes (the whole CI run must stay within its time budget).
const SHOWN = 20;

export default class SlowestSuitesReporter {
  onRunComplete(_contexts, results) {
    const relative = (path) => path.replace(`${process.cwd()}/`, '');
    const files = results.testResults
      .map((r) => ({ name: relative(r.testFilePath), s: (r.perfStats.end - r.perfStats.start) / 1000 }))
      .sort((a, b) => b.s - a.s);
    const tests = results.testResults
      .flatMap((r) => r.testResults.map((t) => ({ name: `${relative(r.testFilePath)} › ${t.fullName}`, s: (t.duration ?? 0) / 1000 })))
      .sort((a, b) => b.s - a.s);
    const total = files.reduce((sum, x) => sum + x.s, 0);
    const table = (xs) =>
      xs
        .slice(0, SHOWN)
        .map((x) => `${x.s.toFixed(1).padStart(7)} s  ${x.name.slice(0, 160)}`)
        .join('\n');
    process.stderr.write(
      `\nSlowest test files (${files.length} files, ${total.toFixed(0)} s of file time in all):\n${table(files)}\n` +
        `\nSlowest tests:\n${table(tests)}\n`,
    );
  }
}
