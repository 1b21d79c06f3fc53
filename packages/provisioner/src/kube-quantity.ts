// Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`), read as the API server reads them
// (k8s.io/apimachinery's resource.ParseQuantity), so a value the server would refuse, or compare
// differently, is caught before a Pod is ever sent.
//
//   <quantity>        ::= <sign>? <digits>? ( "." <digits>? )? <suffix>
//   <suffix>          ::= <binarySI> | <decimalSI> | <decimalExponent>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= ( e | E ) <sign>? <digits>
//
// The scanner is the server's, odd corners included: `1.`, `.5`, `+` and `.` are accepted (the
// last two as zero), and a non-zero value below one nano unit is rounded up to `1n`.

/** An exact value: `sign × digits × 10^exponent`, `digits` without leading zeros ("" is zero). */
export interface Quantity {
  readonly negative: boolean;
  readonly digits: string;
  readonly exponent: number;
}

/** Longer text is refused before it is scanned: no setting or manifest needs more. */
export const MAX_QUANTITY_LENGTH = 64;
/** A decimal exponent beyond this is refused (the server's exponent is an int32 it wraps). */
const MAX_EXPONENT = 1_000_000;

const DECIMAL_SI: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SI: Readonly<Record<string, number>> = {
  Ki: 10,
  Mi: 20,
  Gi: 30,
  Ti: 40,
  Pi: 50,
  Ei: 60,
};
const SUFFIX_CHARS = 'eEinumkKMGTP';
const NANO = -9;

export class QuantityError extends Error {}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

function normalise(negative: boolean, digits: string, exponent: number): Quantity {
  let d = digits.replace(/^0+/, '');
  let e = exponent;
  // Trailing zeros move into the exponent, so equal values have one form.
  const trimmed = d.replace(/0+$/, '');
  e += d.length - trimmed.length;
  d = trimmed;
  if (d === '') return { negative: false, digits: '', exponent: 0 };
  return { negative, digits: d, exponent: e };
}

/**
 * Parses `text` as the API server does.
 *
 * @throws QuantityError with the server's wording when the text is not a quantity
 */
export function parseQuantity(text: string): Quantity {
  if (text.length === 0 || text.length > MAX_QUANTITY_LENGTH) {
    throw new QuantityError(
      text.length === 0
        ? 'quantities must match the regular expression'
        : `longer than ${MAX_QUANTITY_LENGTH} characters`,
    );
  }
  let pos = 0;
  const end = text.length;
  let negative = false;
  if (text[0] === '-' || text[0] === '+') {
    negative = text[0] === '-';
    pos++;
  }
  while (pos < end && text[pos] === '0') pos++;
  if (pos >= end) return normalise(false, '', 0);
  const numStart = pos;
  while (pos < end && isDigit(text[pos])) pos++;
  const num = text.slice(numStart, pos);
  let denom = '';
  if (pos < end && text[pos] === '.') {
    pos++;
    const denomStart = pos;
    while (pos < end && isDigit(text[pos])) pos++;
    denom = text.slice(denomStart, pos);
  }
  const suffixStart = pos;
  while (pos < end && SUFFIX_CHARS.includes(text[pos]!)) pos++;
  if (pos < end && (text[pos] === '-' || text[pos] === '+')) pos++;
  while (pos < end && isDigit(text[pos])) pos++;
  if (pos < end) throw new QuantityError('quantities must match the regular expression');
  const suffix = text.slice(suffixStart);

  let exponent: number;
  let binary = 0;
  if (suffix in DECIMAL_SI) exponent = DECIMAL_SI[suffix]!;
  else if (suffix in BINARY_SI) {
    exponent = 0;
    binary = BINARY_SI[suffix]!;
  } else if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const raw = suffix.slice(1);
    if (!/^[-+]?[0-9]+$/.test(raw)) throw new QuantityError("unable to parse quantity's suffix");
    const parsed = Number(raw);
    if (!Number.isSafeInteger(parsed) || Math.abs(parsed) > MAX_EXPONENT) {
      throw new QuantityError(`exponent beyond ±${MAX_EXPONENT}`);
    }
    exponent = parsed;
  } else {
    throw new QuantityError("unable to parse quantity's suffix");
  }

  let digits = `${num}${denom}`;
  exponent -= denom.length;
  if (binary > 0) digits = (BigInt(digits === '' ? '0' : digits) << BigInt(binary)).toString();
  let q = normalise(negative, digits, exponent);
  // The server rounds a non-zero value up (away from zero) to the nano scale.
  if (q.digits !== '' && q.exponent < NANO) {
    const keep = q.digits.length - (NANO - q.exponent);
    const head = keep > 0 ? q.digits.slice(0, keep) : '0';
    q = normalise(q.negative, (BigInt(head) + 1n).toString(), NANO);
  }
  return q;
}

/** -1, 0 or 1 as `a` is less than, equal to or greater than `b`. */
export function compareQuantities(a: Quantity, b: Quantity): number {
  const sa = a.digits === '' ? 0 : a.negative ? -1 : 1;
  const sb = b.digits === '' ? 0 : b.negative ? -1 : 1;
  if (sa !== sb) return sa < sb ? -1 : 1;
  if (sa === 0) return 0;
  const magnitude = compareMagnitudes(a, b);
  return sa > 0 ? magnitude : -magnitude;
}

function compareMagnitudes(a: Quantity, b: Quantity): number {
  // The position of the leading digit decides, unless it is the same; then the digits do, padded
  // to one exponent (a difference bounded by the digits' lengths, so never a large number).
  const ta = a.digits.length + a.exponent;
  const tb = b.digits.length + b.exponent;
  if (ta !== tb) return ta < tb ? -1 : 1;
  const length = Math.max(a.digits.length, b.digits.length);
  const pa = a.digits.padEnd(length, '0');
  const pb = b.digits.padEnd(length, '0');
  return pa === pb ? 0 : pa < pb ? -1 : 1;
}

/** Whether the value is below zero. */
export function isNegative(q: Quantity): boolean {
  return q.negative && q.digits !== '';
}

export function isZero(q: Quantity): boolean {
  return q.digits === '';
}
