/**
 * One sandbox's brokered credentials: the placeholder the sandbox holds for each, and, only inside
 * the proxy at the moment a request is forwarded, the secret it stands for. A placeholder is an
 * opaque token worth nothing outside the proxy; the secret is resolved per request (so a rotated
 * secret is used at once) and never stored here, in an event or in a log line.
 */
import { createHmac, randomBytes } from 'node:crypto';
import {
  InvalidArgumentError,
  SbxError,
  networkVerdict,
  parseHostRule,
  type Logger,
  type NetworkCredential,
  type NetworkPolicy,
  type NetworkSecretSource,
} from '@sbx/core';
import { PLACEHOLDER_PREFIX } from './placeholder-scanner.js';

/** Asked for a `provider` secret by name; the host application's own secret store. */
export type EgressSecretProvider = (name: string) => Promise<string>;

/** A secret could not be resolved (missing, too large, not a header value, too slow). */
export class EgressSecretUnavailableError extends SbxError {
  static override readonly CODE = 'EGRESS_SECRET_UNAVAILABLE';
  constructor(source: string, problem: string) {
    super(`egress: the secret of ${source} ${problem}`, { details: { source } });
  }
}

/** A placeholder and where it is swapped: handed to the caller for the sandbox's environment. */
export interface EgressPlaceholder {
  readonly host: string;
  /** Lower-cased header name. */
  readonly header: string;
  /** The policy credential's source; absent for request-scoped secrets. */
  readonly source?: NetworkSecretSource;
  readonly placeholder: string;
}

/** A request-scoped secret the caller would otherwise inject into a command's environment. */
export interface EgressBrokeredSecret {
  /** The environment variable the sandbox sees (its value becomes the placeholder). */
  readonly name: string;
  /** The one host (a domain name the policy allows) the secret is sent to. */
  readonly host: string;
  /** The header carrying it there, e.g. `authorization` (the value may be `Bearer <name>`). */
  readonly header: string;
  readonly value: string;
}

/** Request-scoped secrets brokered for one call: `env` goes to the sandbox, `release` after. */
export interface EgressBrokeredEnv {
  readonly env: Readonly<Record<string, string>>;
  release(): void;
}

interface Entry {
  readonly host: string;
  readonly header: string;
  readonly placeholder: string;
  readonly describe: string;
  readonly secret: () => Promise<string>;
}

export interface CredentialBrokerOptions {
  readonly sandboxId: string;
  readonly policy: NetworkPolicy;
  /** Per-proxy key: placeholders are deterministic per (sandbox, secret source) for its life. */
  readonly placeholderKey: Buffer;
  readonly secretEnv: Readonly<Record<string, string | undefined>>;
  readonly secretProvider: EgressSecretProvider | undefined;
  readonly maxSecretBytes: number;
  readonly secretTimeoutMs: number;
  readonly maxBrokeredSecrets: number;
  readonly logger: Logger;
}

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Visible ASCII, space and tab: what a header value may carry without being re-read. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

export class CredentialBroker {
  readonly #options: CredentialBrokerOptions;
  /** Keyed by placeholder, host and header: one placeholder may serve several hosts (below). */
  readonly #entries = new Map<string, Entry>();
  #scoped = 0;
  readonly #policyPlaceholders: EgressPlaceholder[] = [];

  constructor(options: CredentialBrokerOptions) {
    this.#options = options;
    for (const credential of options.policy.credentials) {
      const placeholder = this.#derive(credential);
      const describe = `${credential.source.kind}:${credential.source.name}`;
      this.#entries.set(entryKey(placeholder, credential.host, credential.header), {
        host: credential.host,
        header: credential.header,
        placeholder,
        describe,
        secret: () => this.#resolve(credential.source, describe),
      });
      this.#policyPlaceholders.push({
        host: credential.host,
        header: credential.header,
        source: credential.source,
        placeholder,
      });
    }
  }

  /** The placeholders of the policy's credentials, for the sandbox's environment. */
  get placeholders(): readonly EgressPlaceholder[] {
    return this.#policyPlaceholders;
  }

  /** The credentials swapped for requests to `host`. */
  forHost(host: string): readonly Entry[] {
    return [...this.#entries.values()].filter((e) => e.host === host);
  }

  /** The credential a placeholder stands for, if it is one of this sandbox's. */
  byPlaceholder(placeholder: string): Entry | undefined {
    return [...this.#entries.values()].find((e) => e.placeholder === placeholder);
  }

  /**
   * Registers request-scoped secrets (checked here, before any is kept) and returns the
   * environment with placeholders in their place. The secrets live in this process until
   * `release`.
   */
  broker(secrets: readonly EgressBrokeredSecret[]): EgressBrokeredEnv {
    if (!Array.isArray(secrets)) throw new InvalidArgumentError('egress: secrets must be a list');
    if (this.#scoped + secrets.length > this.#options.maxBrokeredSecrets) {
      throw new InvalidArgumentError(
        `egress: at most ${this.#options.maxBrokeredSecrets} brokered secrets per sandbox at once`,
      );
    }
    const added: Entry[] = [];
    const env: Record<string, string> = {};
    for (const [i, secret] of secrets.entries()) {
      const path = `secrets[${i}]`;
      if (typeof secret?.name !== 'string' || !ENV_NAME.test(secret.name)) {
        throw new InvalidArgumentError(`egress: ${path}.name must be an environment variable name`);
      }
      // A domain name, not a pattern or a port: the secret goes to exactly this host.
      const host =
        typeof secret.host === 'string' && /^[A-Za-z0-9.-]{1,254}$/.test(secret.host)
          ? parseHostRule(secret.host, `egress: ${path}.host`)
          : undefined;
      if (host === undefined) {
        throw new InvalidArgumentError(`egress: ${path}.host must be a domain name`);
      }
      // A secret for a host the sandbox may not reach could never be used, only leaked.
      if (!networkVerdict(this.#options.policy, host.host, 443).allowed) {
        throw new InvalidArgumentError(`egress: ${path}.host is not allowed by the policy`);
      }
      if (typeof secret.header !== 'string' || !HEADER_NAME.test(secret.header)) {
        throw new InvalidArgumentError(`egress: ${path}.header must be an HTTP header name`);
      }
      const value = secret.value;
      this.#checkValue(value, `${path}.value`, (problem) => new InvalidArgumentError(problem));
      const placeholder = PLACEHOLDER_PREFIX + randomBytes(32).toString('base64url');
      added.push({
        host: host.host,
        header: secret.header.toLowerCase(),
        placeholder,
        describe: `request:${secret.name}`,
        secret: async () => value,
      });
      env[secret.name] = placeholder;
    }
    for (const entry of added)
      this.#entries.set(entryKey(entry.placeholder, entry.host, entry.header), entry);
    this.#scoped += added.length;
    let released = false;
    return {
      env: Object.freeze(env),
      release: () => {
        if (released) return;
        released = true;
        for (const entry of added)
          this.#entries.delete(entryKey(entry.placeholder, entry.host, entry.header));
        this.#scoped -= added.length;
      },
    };
  }

  #derive(credential: NetworkCredential): string {
    const mac = createHmac('sha256', this.#options.placeholderKey)
      .update(
        // Not the host or header: a variable the sandbox holds one placeholder in may be the
        // credential of several hosts, and each must recognise the same placeholder.
        JSON.stringify([this.#options.sandboxId, credential.source.kind, credential.source.name]),
      )
      .digest('base64url');
    return PLACEHOLDER_PREFIX + mac;
  }

  #checkValue(
    value: unknown,
    what: string,
    error: (problem: string) => SbxError,
  ): asserts value is string {
    if (typeof value !== 'string' || value.length === 0) throw error(`${what} is empty`);
    if (Buffer.byteLength(value, 'latin1') > this.#options.maxSecretBytes) {
      throw error(`${what} is over ${this.#options.maxSecretBytes} bytes`);
    }
    // A CR or LF would end the header and start another: request splitting with the secret.
    if (!HEADER_VALUE.test(value)) throw error(`${what} is not a header value (visible ASCII)`);
  }

  async #resolve(source: NetworkSecretSource, describe: string): Promise<string> {
    const fail = (problem: string) => new EgressSecretUnavailableError(describe, problem);
    let value: unknown;
    if (source.kind === 'env') {
      value = this.#options.secretEnv[source.name];
    } else {
      const provider = this.#options.secretProvider;
      if (!provider) throw fail('needs a secretProvider, and the proxy has none');
      let timer: NodeJS.Timeout | undefined;
      try {
        value = await Promise.race([
          provider(source.name),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(fail('took too long')), this.#options.secretTimeoutMs);
            timer.unref();
          }),
        ]);
      } catch (cause) {
        if (cause instanceof EgressSecretUnavailableError) throw cause;
        this.#options.logger.warn('egress secret provider failed', {
          source: describe,
          error: cause,
        });
        throw fail('could not be read from the secret provider');
      } finally {
        clearTimeout(timer);
      }
    }
    this.#checkValue(value, 'the value', fail);
    return value;
  }
}

function entryKey(placeholder: string, host: string, header: string): string {
  return `${placeholder}\0${host}\0${header}`;
}
