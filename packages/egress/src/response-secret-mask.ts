/**
 * Masks brokered secrets in what an upstream sends back, so an API that echoes a request header
 * (or a token in an error message) does not hand the secret to the sandbox. Each occurrence is
 * replaced by as many `*` bytes, so `Content-Length` framing stays true. A chunk that ends with the
 * start of a secret is held back until the next bytes (or the end of the body) tell whether the
 * secret follows: the bytes that complete a secret are never sent unmasked. The hold-back is found
 * with a KMP automaton over at most one secret's length, so work stays linear in the bytes.
 */

/**
 * Held-back bytes at the end of a body are masked from this many on: shorter starts of a secret
 * collide with ordinary text too often to rewrite, and leak too little to matter.
 */
export const MIN_MASKED_PREFIX_BYTES = 8;

const STAR = 0x2a;

interface Pattern {
  readonly bytes: Buffer;
  /** KMP failure function: longest proper prefix that is also a suffix of `bytes[0..i]`. */
  readonly fail: Uint32Array;
}

function compile(secret: string): Pattern {
  const bytes = Buffer.from(secret, 'latin1');
  const fail = new Uint32Array(bytes.length);
  let k = 0;
  for (let i = 1; i < bytes.length; i += 1) {
    while (k > 0 && bytes[i] !== bytes[k]) k = fail[k - 1]!;
    if (bytes[i] === bytes[k]) k += 1;
    fail[i] = k;
  }
  return { bytes, fail };
}

/** Length of the longest suffix of `data` that is a proper prefix of `pattern`. */
function heldPrefix(data: Buffer, pattern: Pattern): number {
  const { bytes, fail } = pattern;
  let state = 0;
  for (let i = Math.max(0, data.length - (bytes.length - 1)); i < data.length; i += 1) {
    while (state > 0 && data[i] !== bytes[state]) state = fail[state - 1]!;
    if (data[i] === bytes[state]) state += 1;
    if (state === bytes.length) state = fail[state - 1]!;
  }
  return state;
}

export class SecretMasker {
  readonly #patterns: Pattern[] = [];
  readonly #known = new Set<string>();
  #held: Buffer = Buffer.alloc(0);

  /** Adds a secret sent on this connection; responses after it are masked for it. */
  add(secret: string): void {
    if (secret.length === 0 || this.#known.has(secret)) return;
    this.#known.add(secret);
    this.#patterns.push(compile(secret));
  }

  get active(): boolean {
    return this.#patterns.length > 0;
  }

  /** Whole text (a response head): every occurrence masked. */
  maskAll(data: Buffer): Buffer {
    for (const { bytes } of this.#patterns) {
      for (let at = data.indexOf(bytes); at !== -1; at = data.indexOf(bytes, at + bytes.length)) {
        data.fill(STAR, at, at + bytes.length);
      }
    }
    return data;
  }

  /** The bytes of a body that may be sent now; a possible start of a secret is kept back. */
  push(chunk: Buffer): Buffer {
    if (this.#patterns.length === 0) return chunk;
    const data = this.maskAll(
      this.#held.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.#held, chunk]),
    );
    let hold = 0;
    for (const pattern of this.#patterns) hold = Math.max(hold, heldPrefix(data, pattern));
    this.#held = Buffer.from(data.subarray(data.length - hold));
    return data.subarray(0, data.length - hold);
  }

  /** At the end of a body: what was held back, masked when it is long enough to be a leak. */
  flush(): Buffer {
    const held = this.#held;
    this.#held = Buffer.alloc(0);
    if (held.length >= MIN_MASKED_PREFIX_BYTES) held.fill(STAR);
    return held;
  }
}
