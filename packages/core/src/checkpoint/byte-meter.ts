import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { CheckpointLimitError, type CheckpointLimitName } from '../errors/checkpoint-errors.js';

/**
 * A pass-through that hashes (sha256) and counts what flows through it, and fails the stream with
 * `CheckpointLimitError` the moment the count passes `bound`: the bound holds as bytes stream, so
 * nothing beyond it is ever produced downstream (how a gzip bomb is stopped).
 */
export class ByteMeter extends Transform {
  bytes = 0;
  readonly #hash: Hash = createHash('sha256');
  readonly #bound: { limit: CheckpointLimitName; max: number } | undefined;

  constructor(bound?: { limit: CheckpointLimitName; max: number }) {
    super();
    this.#bound = bound;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.#bound && this.bytes > this.#bound.max) {
      callback(new CheckpointLimitError(this.#bound.limit, this.#bound.max));
      return;
    }
    this.#hash.update(chunk);
    callback(null, chunk);
  }

  /** The hex sha256 of everything that passed; call once, after the stream ended. */
  digest(): string {
    return this.#hash.digest('hex');
  }
}
