/**
 * `@peculiar/x509`, loaded on first use: it needs the `Reflect` metadata API (its dependency
 * injection uses it), so `reflect-metadata` is imported first. Loading it lazily keeps a proxy
 * without brokering free of both, and of their global `Reflect` additions.
 */
import { webcrypto } from 'node:crypto';
import type * as X509 from '@peculiar/x509';

export type X509Library = typeof X509;

let loading: Promise<X509Library> | undefined;

export function loadX509(): Promise<X509Library> {
  loading ??= (async () => {
    await import('reflect-metadata');
    const library = await import('@peculiar/x509');
    library.cryptoProvider.set(webcrypto);
    return library;
  })();
  return loading;
}
