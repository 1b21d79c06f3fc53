/**
 * The one result order of every search helper, local or remote: relative paths compared segment
 * by segment (code-unit order), a directory immediately followed by its contents. It is exactly a
 * depth-first walk with sorted directory listings, so the local walkers can stream in this order
 * and stop early, while remote parsers, which receive `find` output in on-disk order, sort into it.
 */
export function compareRelativePaths(a: string, b: string): number {
  const as = a.split('/');
  const bs = b.split('/');
  const n = Math.min(as.length, bs.length);
  for (let i = 0; i < n; i++) {
    const x = as[i]!;
    const y = bs[i]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return as.length - bs.length;
}

/** Code-unit order of single names (what `compareRelativePaths` applies per segment). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
