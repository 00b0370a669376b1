/**
 * Where a JSON text stops being valid, as a line and column an editor shows. V8's own message gives
 * a position for some mistakes only ("Unexpected token ','" has none, whatever the text), and counts
 * UTF-16 units, so a line holding an emoji puts its column one off. This scanner follows the JSON
 * grammar just far enough to find the first offending character; columns count characters (code
 * points), lines end at \n (a \r before it is part of the line's end).
 */

export interface TextPosition {
  line: number;
  column: number;
}

/** The 1-based line and column of the first character JSON.parse refuses, or of the text's end. */
export function jsonErrorPosition(text: string): TextPosition {
  return positionAt(text, jsonErrorOffset(text));
}

/** The UTF-16 offset of the first character that makes `text` invalid JSON (text.length: it ends early). */
export function jsonErrorOffset(text: string): number {
  let at = 0;
  const fail = (): never => {
    throw new Stop(at);
  };
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at += 1;
  };
  const expect = (char: string) => {
    if (text[at] !== char) fail();
    at += 1;
  };
  const literal = (word: string) => {
    for (const char of word) expect(char);
  };
  const string = () => {
    expect('"');
    for (;;) {
      const char = text[at];
      if (char === undefined || char < ' ') fail();
      if (char === '"') {
        at += 1;
        return;
      }
      if (char === '\\') {
        at += 1;
        const escaped = text[at];
        if (escaped === 'u') {
          at += 1;
          for (let digit = 0; digit < 4; digit += 1) {
            if (!/[0-9a-fA-F]/.test(text[at] ?? '')) fail();
            at += 1;
          }
        } else if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) at += 1;
        else fail();
      } else at += 1;
    }
  };
  const digits = () => {
    if (!/[0-9]/.test(text[at] ?? '')) fail();
    while (/[0-9]/.test(text[at] ?? '')) at += 1;
  };
  const number = () => {
    if (text[at] === '-') at += 1;
    if (text[at] === '0') at += 1;
    else digits();
    if (text[at] === '.') {
      at += 1;
      digits();
    }
    if (text[at] === 'e' || text[at] === 'E') {
      at += 1;
      if (text[at] === '+' || text[at] === '-') at += 1;
      digits();
    }
  };
  // Iterative over nesting, so no file nests deep enough to overflow the stack. Each call reads one
  // value, or opens a container: true when a value must follow (the first element, or a key's value).
  const closers: string[] = [];
  const member = () => {
    space();
    string();
    space();
    expect(':');
  };
  const value = (): boolean => {
    space();
    const char = text[at];
    if (char === '{' || char === '[') {
      const closer = char === '{' ? '}' : ']';
      at += 1;
      space();
      if (text[at] === closer) {
        at += 1;
        return false;
      }
      closers.push(closer);
      if (closer === '}') member();
      return true;
    }
    if (char === '"') string();
    else if (char === 't') literal('true');
    else if (char === 'f') literal('false');
    else if (char === 'n') literal('null');
    else if (char === '-' || /[0-9]/.test(char ?? '')) number();
    else fail();
    return false;
  };
  try {
    let valueNext = true;
    for (;;) {
      if (valueNext) {
        valueNext = value();
        continue;
      }
      const closer = closers.at(-1);
      if (closer === undefined) break;
      space();
      if (text[at] === ',') {
        at += 1;
        if (closer === '}') member();
        valueNext = true;
        continue;
      }
      expect(closer);
      closers.pop();
    }
    space();
    if (at < text.length) fail();
    return text.length;
  } catch (error) {
    if (error instanceof Stop) return error.offset;
    throw error;
  }
}

class Stop {
  constructor(readonly offset: number) {}
}

function positionAt(text: string, offset: number): TextPosition {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  const line = before.split('\n').length;
  return { line, column: [...before.slice(lineStart)].length + 1 };
}
