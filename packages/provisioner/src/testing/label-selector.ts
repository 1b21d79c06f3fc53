// The API server's equality-based label selectors, as the stand-in filters its lists by them.

/** Equality-based label selectors: `k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated. */
export function matchesSelector(
  labels: Record<string, string> | undefined,
  selector: string | null,
): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  return selector.split(',').every((raw) => {
    const term = raw.trim();
    if (term === '') return true;
    const ne = term.indexOf('!=');
    if (ne > 0) return l[term.slice(0, ne)] !== term.slice(ne + 2);
    const eq = term.indexOf('=');
    if (eq > 0) return l[term.slice(0, eq)] === term.slice(term[eq + 1] === '=' ? eq + 2 : eq + 1);
    if (term.startsWith('!')) return !(term.slice(1) in l);
    return term in l;
  });
}
