import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor, secretForms } from '../../../functions/redaction/redactor.ts';

/** The example: a secret with spaces, a slash, an equals sign, a quote and a non-ASCII letter. */
const SECRET = 'abc /="SECRET789" xé';

/** Every way a server or a store might write the secret back. */
function encodings(secret: string): Record<string, string> {
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  const basic = Buffer.from(`user:${secret}`).toString('base64');
  return {
    raw: secret,
    component: encodeURIComponent(secret),
    componentLower: encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
    uri: encodeURI(secret),
    form,
    formLower: form.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
    json: JSON.stringify(secret).slice(1, -1),
    jsonInJson: JSON.stringify(JSON.stringify(secret)).slice(1, -1),
    jsonSlashes: JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/'),
    jsonAscii: JSON.stringify(secret).slice(1, -1).replace('é', '\\u00e9'),
    jsonOfForm: JSON.stringify(form).slice(1, -1),
    base64: Buffer.from(secret).toString('base64'),
    base64url: Buffer.from(secret).toString('base64url'),
    basicAuth: basic,
    basicAuthOffset: Buffer.from(`u:${secret}!`).toString('base64'),
    basicAuthOffset2: Buffer.from(`us:${secret}!!`).toString('base64url'),
  };
}

describe('Redactor', () => {
  it('replaces every encoding of a secret inside longer text, leaving no copy of it', () => {
    const redactor = new Redactor([SECRET]);
    for (const [name, encoded] of Object.entries(encodings(SECRET))) {
      const out = redactor.text(`before ${encoded} after`);
      expect(out, name).toContain(REDACTED);
      // What is left carries none of the secret's distinctive part, in any encoding.
      expect(out, name).not.toContain('SECRET789');
      const decoded = [out, decodeURIComponentSafe(out.replaceAll('+', ' '))];
      for (const base64 of out.match(/[A-Za-z0-9+/_-]{12,}/g) ?? [])
        decoded.push(Buffer.from(base64, 'base64').toString('latin1'));
      for (const text of decoded) expect(text, name).not.toContain('SECRET789');
    }
  });

  it('redacts JSON data deeply, keys included, and leaves other values alone', () => {
    const redactor = new Redactor([SECRET, undefined, '']);
    const value = { [SECRET]: [encodeURIComponent(SECRET), 3, null, { ok: 'plain' }] };
    expect(redactor.value(value)).toEqual({ [REDACTED]: [REDACTED, 3, null, { ok: 'plain' }] });
    expect(new Redactor().value(value)).toBe(value);
  });

  it('derives the forms once per secret and replaces the longest first', () => {
    const redactor = new Redactor(['token-123', 'token-12345']).add('token-123');
    expect(redactor.text('a token-12345 b token-123')).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(new Set(secretForms(SECRET)).size).toBe(secretForms(SECRET).length);
  });
});

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
