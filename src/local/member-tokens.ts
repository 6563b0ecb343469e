import { createHmac, timingSafeEqual } from 'node:crypto';
import { idSchema } from '../domain/ids.js';
import { MEMBER_SCOPE } from '../manifest/index.js';

/**
 * Member tokens of the local runtime (`POST /local/tokens {"user_id"}`, DESIGN 8): JWT-shaped
 * (HS256) so the gateway hands the api the claims a real authorizer would, signed with a key
 * derived from the local API token. Local only: AWS validates its issuer's tokens itself.
 */

export const MEMBER_TOKEN_TTL_S = 3600;

interface MemberClaims {
  readonly sub: string;
  readonly scope: typeof MEMBER_SCOPE;
  readonly iss: 'local';
  readonly aud: 'billing-api';
  readonly client_id: 'local-member-app';
  readonly iat: number;
  readonly exp: number;
}

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');
const signingKey = (apiToken: string) => createHmac('sha256', 'local-member-tokens').update(apiToken).digest();
const sign = (apiToken: string, input: string) => createHmac('sha256', signingKey(apiToken)).update(input).digest();

export function mintMemberToken(apiToken: string, userId: string, nowS: number): { token: string; claims: MemberClaims } {
  const claims: MemberClaims = { sub: userId, scope: MEMBER_SCOPE, iss: 'local', aud: 'billing-api', client_id: 'local-member-app', iat: nowS, exp: nowS + MEMBER_TOKEN_TTL_S };
  const input = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
  return { token: `${input}.${b64url(sign(apiToken, input))}`, claims };
}

/** The claims of a valid, unexpired member token; undefined for anything else. */
export function verifyMemberToken(apiToken: string, token: string, nowS: number): MemberClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  const expected = sign(apiToken, `${header}.${payload}`);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claims: Partial<MemberClaims>;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<MemberClaims>;
  } catch {
    return undefined;
  }
  if (claims.scope !== MEMBER_SCOPE || typeof claims.exp !== 'number' || claims.exp <= nowS || !idSchema.safeParse(claims.sub).success) return undefined;
  return claims as MemberClaims;
}
