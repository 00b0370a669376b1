/**
 * JavaScript evaluated inside each fresh QuickJS context before the user's code. It captures the
 * built-ins the host relies on (so user code replacing `JSON.stringify` cannot change how output is
 * read), installs a `console` that records into a bounded list, and returns the functions the host
 * calls. The returned object is held only by the host; user code can reach `console`, nothing else.
 */

export const MAX_LOG_ENTRIES = 100;
export const MAX_LOG_ENTRY_CHARS = 1000;
export const MAX_LOG_TOTAL_CHARS = 16_384;
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

  const describe = (value) => {
    let text;
    try {
      if (typeof value === 'string') text = value;
      else if (value !== null && typeof value === 'object' && !(value instanceof ErrorCtor)) {
        text = stringify(value);
        if (text === undefined) text = toStr(value);
      } else text = toStr(value);
    } catch (e) {
      text = '[unprintable ' + typeof value + ']';
    }
    return text.length > ${MAX_DESCRIPTION_CHARS} ? text.slice(0, ${MAX_DESCRIPTION_CHARS}) + '…' : text;
  };

  const record = (level) => function (...args) {
    if (logs.length >= ${MAX_LOG_ENTRIES} || logChars >= ${MAX_LOG_TOTAL_CHARS}) return;
    let line = level === 'log' ? '' : level + ': ';
    for (let i = 0; i < args.length; i++) line += (i > 0 ? ' ' : '') + describe(args[i]);
    if (line.length > ${MAX_LOG_ENTRY_CHARS}) line = line.slice(0, ${MAX_LOG_ENTRY_CHARS}) + '…';
    if (logChars + line.length > ${MAX_LOG_TOTAL_CHARS}) line = line.slice(0, ${MAX_LOG_TOTAL_CHARS} - logChars);
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
  };
})()`;
