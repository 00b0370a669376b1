/**
 * JavaScript evaluated inside each fresh QuickJS context before the user's code. It captures the
 * built-ins the host relies on (so user code replacing `JSON.stringify` cannot change how output is
 * read), installs a `console` that records into a bounded list (counting what the bounds cut), and
 * returns the functions the host calls. The returned object is held only by the host; user code can reach `console`, nothing else.
 */

/** What `console.*` output is kept: the first lines, each and all together cut to a length. */
export const MAX_LOG_ENTRIES = 1000;
export const MAX_LOG_ENTRY_CHARS = 2000;
export const MAX_LOG_TOTAL_CHARS = 64 * 1024;
/** Longest error message or thrown-value description passed back to the host. */
export const MAX_DESCRIPTION_CHARS = 2000;

export const HARNESS_FILENAME = 'stepthread-harness.js';

/**
 * Offset between a line in the user's code and the line QuickJS reports: the AsyncFunction
 * constructor puts the parameter list and the opening brace on the two lines before the body.
 */
export const USER_CODE_LINE_OFFSET = 2;
/** File name QuickJS gives code compiled by the Function constructors. */
export const USER_CODE_FILENAME = '<input>';

export const GUEST_HARNESS_SOURCE = `(() => {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const AsyncFunction = (async function () {}).constructor;
  const toStr = String;
  const ErrorCtor = Error;
  const logs = [];
  let logChars = 0;
  // What the bounds cut: lines dropped whole (never formatted, so a flood costs little), and
  // characters cut from the ends of kept lines.
  const logCut = { lines: 0, chars: 0 };

  const text = (value) => {
    try {
      if (typeof value === 'string') return value;
      if (value !== null && typeof value === 'object' && !(value instanceof ErrorCtor)) {
        const json = stringify(value);
        if (json !== undefined) return json;
      }
      return toStr(value);
    } catch (e) {
      return '[unprintable ' + typeof value + ']';
    }
  };

  const describe = (value) => {
    const described = text(value);
    return described.length > ${MAX_DESCRIPTION_CHARS} ? described.slice(0, ${MAX_DESCRIPTION_CHARS}) + '…' : described;
  };

  const record = (level) => function (...args) {
    if (logs.length >= ${MAX_LOG_ENTRIES} || logChars >= ${MAX_LOG_TOTAL_CHARS}) {
      logCut.lines += 1;
      return;
    }
    let line = level === 'log' ? '' : level + ': ';
    for (let i = 0; i < args.length; i++) line += (i > 0 ? ' ' : '') + text(args[i]);
    const room = Math.min(${MAX_LOG_ENTRY_CHARS}, ${MAX_LOG_TOTAL_CHARS} - logChars);
    if (line.length > room) {
      // The ellipsis takes the last character of the room, so the bounds hold with it.
      logCut.chars += line.length - (room - 1);
      line = line.slice(0, room - 1) + '…';
    }
    logChars += line.length;
    logs[logs.length] = line;
  };
  globalThis.console = {
    log: record('log'),
    info: record('info'),
    warn: record('warn'),
    error: record('error'),
    debug: record('debug'),
  };

  // JSON.stringify silently drops functions and symbols; a CODE node's output must not lose data.
  const rejectNonJson = function (key, value) {
    const type = typeof value;
    if (type === 'function' || type === 'symbol') {
      throw new TypeError('output contains a ' + type + (key === '' ? '' : ' at key "' + key + '"') + ', which is not JSON');
    }
    return value;
  };

  return {
    compile: (code) => new AsyncFunction('input', code),
    parseInput: (json) => (json === undefined ? undefined : parse(json)),
    serialise: (value) => (value === undefined ? 'null' : stringify(value, rejectNonJson)),
    describe,
    logs,
    logCut,
  };
})()`;
