import { describe, expect, it } from 'vitest';
import { idSchema } from '../../src/domain/ids.js';

/** DESIGN 8: 1 to 256 printable characters, without '/', '#', whitespace or control characters. */
describe('idSchema', () => {
  it.each([
    ['an auth0 id', 'auth0|5f7c8ec7c33c6c004bbafe82'],
    ['a google-oauth2 id', 'google-oauth2|104398237462918374651'],
    ['a uuid', '0b0e7a36-6f0e-4a53-9a8e-8a3c2f0b3d11'],
    ['punctuation and a percent sign', "a.b_c:d@e~f+g=h-i|j%7C!$&'()*,;[]{}<>?^`\""],
    ['one character', 'x'],
    ['256 characters', 'x'.repeat(256)],
    ['256 CJK characters (768 bytes)', '日'.repeat(256)],
    ['accents and an emoji', 'jürgen😀'],
  ])('accepts %s unchanged', (_what, id) => {
    expect(idSchema.parse(id)).toBe(id);
  });

  it.each([
    ['nothing', ''],
    ['257 characters', 'x'.repeat(257)],
    ['more than 768 bytes of UTF-8', '😀'.repeat(193)],
    ['a slash', 'a/b'],
    ['a hash', 'a#b'],
    ['a space', 'a b'],
    ['a leading space (not trimmed)', ' ab'],
    ['a tab', 'a\tb'],
    ['a newline', 'a\nb'],
    ['a no-break space', 'a\u00a0b'],
    ['a line separator', 'a\u2028b'],
    ['a NUL', 'a\u0000b'],
    ['a BEL', 'a\u0007b'],
    ['DEL', 'a\u007fb'],
    ['a zero-width space (format)', 'a\u200bb'],
    ['a lone surrogate', 'a\ud800b'],
    ['a private-use character', 'a\ue000b'],
  ])('refuses %s', (_what, id) => {
    expect(idSchema.safeParse(id).success).toBe(false);
  });

  it('refuses what is not a string', () => {
    for (const value of [undefined, null, 42, {}, ['a']]) expect(idSchema.safeParse(value).success).toBe(false);
  });
});
