// Preloaded (`node --import`) into a `stepthread` process by test/e2e/resume-continued.test.ts: the
// process SIGKILLs itself the moment it writes a chosen stderr line, so a test can stop a run at a
// precise point of a continuation (`⤷ … continues as …` is written after an execution ended and before
// its successor starts; `✓ resume at <node>` once a successor claimed the thread).
//
// STEPTHREAD_TEST_KILL_ON: JSON [[regex, count], ...]: each step waits for `count` lines matching its
// regex (counted after the step before it completed); after the last one the process kills itself.
const spec = process.env.STEPTHREAD_TEST_KILL_ON;
if (spec) {
  const steps = JSON.parse(spec).map(([source, count]) => ({ pattern: new RegExp(source, 'u'), count }));
  let step = 0;
  let seen = 0;
  let pending = '';
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk, ...rest) => {
    const written = write(chunk, ...rest);
    pending += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (step >= steps.length || !steps[step].pattern.test(line)) continue;
      seen += 1;
      if (seen < steps[step].count) continue;
      step += 1;
      seen = 0;
      if (step === steps.length) process.kill(process.pid, 'SIGKILL');
    }
    return written;
  };
}
