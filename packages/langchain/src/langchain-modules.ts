import { loadOptionalDependency } from '@sbx/core';
import type * as LangChainDispatch from '@langchain/core/callbacks/dispatch';
import type * as LangChainMessages from '@langchain/core/messages';
import type * as LangChainSingletons from '@langchain/core/singletons';
import type * as LangChainTools from '@langchain/core/tools';

export interface LangChainModules {
  readonly tools: typeof LangChainTools;
  readonly messages: typeof LangChainMessages;
  readonly singletons: typeof LangChainSingletons;
  readonly dispatch: typeof LangChainDispatch;
}

let modules: Promise<LangChainModules> | undefined;

/**
 * `@langchain/core` is a peer dependency loaded on first use, so importing this package never
 * loads LangChain (and a missing install is a `MissingDependencyError` with the install hint).
 */
export function langChainModules(): Promise<LangChainModules> {
  modules ??= (async () => {
    const [tools, messages, singletons, dispatch] = await Promise.all([
      loadOptionalDependency<typeof LangChainTools>('@langchain/core/tools', '@sbx/langchain'),
      loadOptionalDependency<typeof LangChainMessages>(
        '@langchain/core/messages',
        '@sbx/langchain',
      ),
      loadOptionalDependency<typeof LangChainSingletons>(
        '@langchain/core/singletons',
        '@sbx/langchain',
      ),
      loadOptionalDependency<typeof LangChainDispatch>(
        '@langchain/core/callbacks/dispatch',
        '@sbx/langchain',
      ),
    ]);
    return { tools, messages, singletons, dispatch };
  })();
  modules.catch(() => {
    // A failed load is retried on the next call (e.g. after the peer was installed).
    modules = undefined;
  });
  return modules;
}
