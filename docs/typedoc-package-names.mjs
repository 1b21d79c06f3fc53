// TypeDoc plugin for `npm run docs:api`: names each module after the package entry users import
// (`@sbx/aio`, `@sbx/core/testing`) instead of its source path (`aio/src`, `core/src/testing`).
import { Converter, ReflectionKind } from 'typedoc';

/** `aio/src` -> `@sbx/aio`; `core/src/testing` -> `@sbx/core/testing`; anything else unchanged. */
export function packageEntryName(moduleName) {
  const match = /^([a-z0-9-]+)\/src(?:\/(.+))?$/.exec(moduleName);
  if (!match) return moduleName;
  return match[2] ? `@sbx/${match[1]}/${match[2]}` : `@sbx/${match[1]}`;
}

export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const mod of context.project.getReflectionsByKind(ReflectionKind.Module)) {
      mod.name = packageEntryName(mod.name);
    }
  });
}
