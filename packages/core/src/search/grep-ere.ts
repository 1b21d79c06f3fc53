/**
 * Turns a JS regex source (as produced by `compileGrepPattern`, so known to be valid) into a
 * POSIX extended regular expression for `grep -E` on a remote sandbox. The ERE is a *prefilter*:
 * it is built to match every line the JS expression matches (and possibly more), and the remote
 * search parser re-checks every returned line with the JS expression. Constructs ERE cannot
 * express are widened rather than rejected, which keeps results identical to a local search:
 *
 * - lookarounds and `\b` / `\B` are dropped (a zero-width assertion only ever removes matches);
 * - backreferences become `(.*)`, lazy quantifiers become greedy, counts above 255 open up;
 * - `\d` → `[0-9]`, `\w` → `[[:alnum:]_]`; `\D` → `[^0-9]`; other class escapes (whose exact
 *   Unicode extent the remote libc may see differently) become `.`, and so does any bracket
 *   expression that cannot be rendered exactly in POSIX syntax;
 * - characters no line can contain (newline, NUL) become `.`.
 *
 * The widening is exact for ASCII text; for non-ASCII text it assumes the remote runs in a UTF-8
 * locale (as `.` does). An empty result means "every line".
 */
export function regexToPosixEre(source: string): string {
  try {
    const parser = new Parser(source);
    const alt = parser.parseAlternation();
    if (parser.pos !== source.length) return '';
    return emitTopLevel(alt);
  } catch {
    // A shape this translator does not know: widen to every line; the JS re-check still decides.
    return '';
  }
}

type Node =
  | { t: 'empty' }
  | { t: 'atom'; ere: string }
  | { t: 'anchor'; ere: string }
  | { t: 'group'; alt: Node[][] }
  | { t: 'quant'; node: Node; min: number; max: number | null };

// Sticky: matched at the parser's position without copying the rest of the pattern each time
// (a copy per `{` made the conversion quadratic on a pattern of braces).
const BRACE_QUANTIFIER = /\{(\d+)(?:(,)(\d*))?\}/y;
const HEX2 = /[0-9A-Fa-f]{2}/y;
const HEX4 = /[0-9A-Fa-f]{4}/y;

const ERE_SPECIAL = new Set(['.', '[', '\\', '(', ')', '*', '+', '?', '{', '|', '^', '$']);
const RE_DUP_MAX = 255;
const ANY: Node = { t: 'atom', ere: '.' };

function literal(ch: string): Node {
  if (ch === '\n' || ch === '\0') return ANY;
  return { t: 'atom', ere: ERE_SPECIAL.has(ch) ? `\\${ch}` : ch };
}

interface ClassItems {
  chars: Set<string>;
  ranges: [string, string][];
  named: Set<string>;
  /** Set when an item has no exact POSIX rendering in this (possibly negated) class. */
  inexact: boolean;
}

class Parser {
  pos = 0;
  constructor(private readonly s: string) {}

  private peek(offset = 0): string | undefined {
    return this.s[this.pos + offset];
  }

  parseAlternation(): Node[][] {
    const branches = [this.parseSequence()];
    while (this.peek() === '|') {
      this.pos++;
      branches.push(this.parseSequence());
    }
    return branches;
  }

  private parseSequence(): Node[] {
    const items: Node[] = [];
    for (let ch = this.peek(); ch !== undefined && ch !== '|' && ch !== ')'; ch = this.peek()) {
      const atom = this.parseAtom();
      items.push(this.parseQuantifier(atom));
    }
    return items;
  }

  private parseQuantifier(node: Node): Node {
    const ch = this.peek();
    let min: number;
    let max: number | null;
    if (ch === '*') [min, max] = [0, null];
    else if (ch === '+') [min, max] = [1, null];
    else if (ch === '?') [min, max] = [0, 1];
    else if (ch === '{') {
      BRACE_QUANTIFIER.lastIndex = this.pos;
      const m = BRACE_QUANTIFIER.exec(this.s);
      if (!m) return node;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? null : Number(m[3]);
      this.pos += m[0].length - 1;
    } else return node;
    this.pos++;
    if (this.peek() === '?') this.pos++; // lazy → greedy: same set of matching lines
    return { t: 'quant', node, min, max };
  }

  private parseAtom(): Node {
    const ch = this.s[this.pos++]!;
    switch (ch) {
      case '^':
      case '$':
        return { t: 'anchor', ere: ch };
      case '.':
        return ANY;
      case '[':
        return this.parseClass();
      case '\\':
        return this.parseEscape();
      case '(':
        return this.parseGroup();
      default:
        return literal(ch);
    }
  }

  private parseGroup(): Node {
    let lookaround = false;
    if (this.s.startsWith('?:', this.pos)) this.pos += 2;
    else if (this.s.startsWith('?=', this.pos) || this.s.startsWith('?!', this.pos)) {
      lookaround = true;
      this.pos += 2;
    } else if (this.s.startsWith('?<=', this.pos) || this.s.startsWith('?<!', this.pos)) {
      lookaround = true;
      this.pos += 3;
    } else if (this.s.startsWith('?<', this.pos)) {
      const close = this.s.indexOf('>', this.pos);
      if (close === -1) throw new Error('unterminated group name');
      this.pos = close + 1;
    }
    const alt = this.parseAlternation();
    if (this.s[this.pos++] !== ')') throw new Error('unbalanced group');
    return lookaround ? { t: 'empty' } : { t: 'group', alt };
  }

  private parseEscape(): Node {
    const c = this.s[this.pos++];
    if (c === undefined) throw new Error('trailing backslash');
    switch (c) {
      case 'd':
        return { t: 'atom', ere: '[0-9]' };
      case 'D':
        return { t: 'atom', ere: '[^0-9]' };
      case 'w':
        return { t: 'atom', ere: '[[:alnum:]_]' };
      case 'W':
      case 's':
      case 'S':
        return ANY;
      case 'b':
      case 'B':
        return { t: 'empty' };
      case 'k':
        if (this.peek() === '<') {
          const close = this.s.indexOf('>', this.pos);
          if (close !== -1) {
            this.pos = close + 1;
            return { t: 'group', alt: [[{ t: 'quant', node: ANY, min: 0, max: null }]] };
          }
        }
        return literal('k');
      default:
        break;
    }
    if (c >= '1' && c <= '9') {
      while (/[0-9]/.test(this.peek() ?? '')) this.pos++;
      return { t: 'group', alt: [[{ t: 'quant', node: ANY, min: 0, max: null }]] };
    }
    const ch = this.characterEscape(c);
    return ch === undefined ? ANY : literal(ch);
  }

  /** The character a (non-class) character escape stands for; `undefined` when it varies. */
  private characterEscape(c: string): string | undefined {
    switch (c) {
      case 't':
        return '\t';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      case '0':
        // `\0`, or a legacy octal escape such as `\012`.
        while (/[0-7]/.test(this.peek() ?? '') && this.pos < this.s.length) this.pos++;
        return undefined;
      case 'c':
        if (/[A-Za-z]/.test(this.peek() ?? '')) {
          this.pos++;
          return undefined;
        }
        return '\\';
      case 'x': {
        HEX2.lastIndex = this.pos;
        const m = HEX2.exec(this.s);
        if (!m) return 'x';
        this.pos += 2;
        return String.fromCharCode(parseInt(m[0], 16));
      }
      case 'u': {
        HEX4.lastIndex = this.pos;
        const m = HEX4.exec(this.s);
        if (!m) return 'u';
        this.pos += 4;
        return String.fromCharCode(parseInt(m[0], 16));
      }
      default:
        return c;
    }
  }

  private parseClass(): Node {
    const negated = this.peek() === '^';
    if (negated) this.pos++;
    const items: ClassItems = { chars: new Set(), ranges: [], named: new Set(), inexact: false };
    for (;;) {
      const ch = this.s[this.pos++];
      if (ch === undefined) throw new Error('unterminated class');
      if (ch === ']') break;
      const start = ch === '\\' ? this.classEscape(items, negated) : ch;
      if (start === undefined) continue;
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        const save = this.pos;
        this.pos++;
        const endCh = this.s[this.pos++]!;
        const end = endCh === '\\' ? this.classEscape(items, negated) : endCh;
        if (end === undefined) {
          // `[a-\d]`: in legacy syntax the `-` is a member.
          items.chars.add(start);
          items.chars.add('-');
          continue;
        }
        if (end < start) {
          this.pos = save;
          throw new Error('bad range');
        }
        items.ranges.push([start, end]);
        continue;
      }
      items.chars.add(start);
    }
    return renderClass(items, negated);
  }

  /** A class escape: adds named sets to `items` and returns `undefined`, or returns a character. */
  private classEscape(items: ClassItems, negated: boolean): string | undefined {
    const c = this.s[this.pos++];
    if (c === undefined) throw new Error('trailing backslash');
    switch (c) {
      case 'd':
        items.ranges.push(['0', '9']);
        return undefined;
      case 'w':
        items.named.add('alnum');
        items.chars.add('_');
        // `[[:alnum:]]` covers more than ASCII: fine to widen a set, wrong to widen its complement.
        if (negated) items.inexact = true;
        return undefined;
      case 'D':
      case 'W':
      case 's':
      case 'S':
        items.inexact = true;
        return undefined;
      case 'b':
        return '\b';
      default: {
        const ch = this.characterEscape(c);
        if (ch === undefined) items.inexact = true;
        return ch;
      }
    }
  }
}

const BRACKET_AWKWARD = new Set([']', '-', '^', '[', '\\']);

function renderClass(items: ClassItems, negated: boolean): Node {
  // A line never holds a newline or NUL, so such members can be dropped from either polarity.
  items.chars.delete('\n');
  items.chars.delete('\0');
  if (items.inexact) return ANY;
  for (const [a, b] of items.ranges) {
    if (BRACKET_AWKWARD.has(a) || BRACKET_AWKWARD.has(b)) return ANY;
    // Outside ASCII digits, range membership follows the remote locale's collation: only trust
    // it to widen a positive set.
    if (negated && !(a >= '0' && b <= '9')) return ANY;
  }
  if (negated && [...items.chars].some((c) => c.charCodeAt(0) > 0x7f)) return ANY;
  const chars = [...items.chars];
  // `:` (and `.`, `=`) go last among the plain members: right after the opening `[` they read
  // like the start of `[:class:]` to some implementations.
  const plain = chars
    .filter((c) => !BRACKET_AWKWARD.has(c))
    .sort((a, b) => Number(':.='.includes(a)) - Number(':.='.includes(b)));
  const body =
    (items.chars.has(']') ? ']' : '') +
    plain.join('') +
    items.ranges.map(([a, b]) => `${a}-${b}`).join('') +
    [...items.named].map((n) => `[:${n}:]`).join('') +
    (items.chars.has('\\') ? '\\' : '') +
    (items.chars.has('^') ? '^' : '') +
    (items.chars.has('[') ? '[' : '') +
    (items.chars.has('-') ? '-' : '');
  if (body === '') return ANY; // `[]` never matches and `[^]` matches anything: both widen to `.`
  if (body === '^' && !negated) return literal('^');
  // `^` must not lead a positive set; `]` leads and `-` trails, both literal there.
  if (!negated && body.startsWith('^')) return ANY;
  return { t: 'atom', ere: `[${negated ? '^' : ''}${body}]` };
}

function emit(node: Node): string {
  switch (node.t) {
    case 'empty':
      return '';
    case 'atom':
    case 'anchor':
      return node.ere;
    case 'group': {
      const branches = node.alt.map(emitSequence);
      const filled = branches.filter((b) => b !== '');
      if (filled.length === 0) return '';
      const inner = `(${filled.join('|')})`;
      // An empty branch makes the whole group optional; the extra parentheses keep it one atom.
      return filled.length < branches.length ? `(${inner}?)` : inner;
    }
    case 'quant': {
      const inner = emit(node.node);
      if (inner === '' || node.node.t === 'anchor') return inner;
      const { min, max } = node;
      if (min === 0 && max === null) return `${inner}*`;
      if (min === 1 && max === null) return `${inner}+`;
      if (min === 0 && max === 1) return `${inner}?`;
      const lo = Math.min(min, RE_DUP_MAX);
      if (max === null || max > RE_DUP_MAX || min > RE_DUP_MAX) return `${inner}{${lo},}`;
      return max === min ? `${inner}{${min}}` : `${inner}{${min},${max}}`;
    }
  }
}

function emitSequence(items: Node[]): string {
  return items.map(emit).join('');
}

function emitTopLevel(alt: Node[][]): string {
  const branches = alt.map(emitSequence);
  return branches.some((b) => b === '') ? '' : branches.join('|');
}
