/**
 * Left-aligned columns separated by two spaces, header first; the last column is not padded, so no
 * line ends in blanks. Cells are single-line (line breaks become spaces).
 */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string[] {
  const clean = (cell: string | undefined): string => (cell ?? '').replace(/\s*\n\s*/g, ' ');
  const all = [header, ...rows].map((row) => header.map((_, i) => clean(row[i])));
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
