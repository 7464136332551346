/** The `callbacks` engine option: how callback URLs (Durable.callback) are signed and where they point. */

export interface CallbackOptions {
  /**
   * The key callback tokens are signed with (HMAC-SHA256), at least 32 bytes: the same on every
   * instance, kept secret (an environment variable). Changing it invalidates the URLs handed out.
   */
  secret: string | Buffer;
  /** Where the app is reached from outside, e.g. `https://shop.example.com`: callback URLs are absolute with it. */
  baseUrl?: string;
  /** The path the callback endpoint is mounted at (Nest module), default `durable/callbacks`. */
  path?: string;
}

export interface ResolvedCallbackOptions {
  secret: Buffer;
  baseUrl: string;
  path: string;
}

/** Defaults applied; problems pushed to `problems`. null without the option. */
export function resolveCallbackOptions(o: CallbackOptions | undefined, problems: string[]): ResolvedCallbackOptions | null {
  if (o === undefined || o === null) return null;
  if (typeof o !== 'object') {
    problems.push('callbacks must be an object { secret, baseUrl?, path? }');
    return null;
  }
  const secret = typeof o.secret === 'string' ? Buffer.from(o.secret, 'utf8') : Buffer.isBuffer(o.secret) ? o.secret : null;
  if (!secret || secret.length < 32)
    problems.push(
      'callbacks.secret must be a string or Buffer of at least 32 bytes (e.g. `openssl rand -hex 32`, from an environment variable)',
    );
  const baseUrl = o.baseUrl ?? '';
  if (typeof baseUrl !== 'string' || (baseUrl && !/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(baseUrl)))
    problems.push(`callbacks.baseUrl must be an http(s) URL such as https://shop.example.com (got ${JSON.stringify(o.baseUrl)})`);
  const path = o.path ?? 'durable/callbacks';
  if (typeof path !== 'string' || !/^[A-Za-z0-9._~/-]{1,200}$/.test(path) || path.includes('//'))
    problems.push(`callbacks.path must be a URL path such as durable/callbacks (got ${JSON.stringify(o.path)})`);
  return { secret: secret ?? Buffer.alloc(0), baseUrl: String(baseUrl).replace(/\/+$/, ''), path: String(path).replace(/^\/+|\/+$/g, '') };
}
