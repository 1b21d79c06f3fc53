import { describe, expect, it } from 'vitest';
import { QuantityError, compareQuantities, parseQuantity } from './kube-quantity.js';

const cmp = (a: string, b: string) => compareQuantities(parseQuantity(a), parseQuantity(b));

describe('Kubernetes quantities, read as the API server reads them', () => {
  it('accepts the grammar: sign, digits, decimals, SI and binary suffixes, e-notation', () => {
    for (const ok of [
      '0',
      '1',
      '+1',
      '-1',
      '100m',
      '1.5',
      '1.',
      '.5',
      '500Mi',
      '1Gi',
      '2Ti',
      '1Pi',
      '1Ei',
      '5n',
      '5u',
      '5m',
      '5k',
      '5M',
      '5G',
      '5T',
      '5P',
      '5E',
      '1e3',
      '1E3',
      '1e-3',
      '1e+3',
      '1.5Gi',
      '0.1',
      '007',
    ]) {
      expect(() => parseQuantity(ok), ok).not.toThrow();
    }
  });

  it('refuses what the server refuses', () => {
    for (const bad of [
      '',
      '1K',
      '1ki',
      '1 Gi',
      ' 1',
      '1e',
      '1Mi5',
      '1.2.3',
      'abc',
      '1x',
      '--1',
      '1e1.5',
      '1GiB',
    ]) {
      expect(() => parseQuantity(bad), bad).toThrow(QuantityError);
    }
  });

  it('keeps the scanner’s odd corners: a bare sign or dot is zero, 1. is one', () => {
    expect(cmp('+', '0')).toBe(0);
    expect(cmp('.', '0')).toBe(0);
    expect(cmp('1.', '1')).toBe(0);
    expect(cmp('e3', '0')).toBe(0);
  });

  it('compares exactly across suffixes', () => {
    expect(cmp('1000m', '1')).toBe(0);
    expect(cmp('2', '1000m')).toBe(1);
    expect(cmp('1Gi', '1G')).toBe(1);
    expect(cmp('1024Mi', '1Gi')).toBe(0);
    expect(cmp('1e3', '1k')).toBe(0);
    expect(cmp('0.5Gi', '512Mi')).toBe(0);
    expect(cmp('-1', '0')).toBe(-1);
    expect(cmp('-2', '-1')).toBe(-1);
    expect(cmp('1E', '1e18')).toBe(0);
    expect(cmp('1Ei', '1E')).toBe(1);
    expect(cmp('256Mi', '0')).toBe(1);
  });

  it('rounds a non-zero value below one nano unit up to 1n, as the server does', () => {
    expect(cmp('0.1n', '1n')).toBe(0);
    expect(cmp('1e-12', '1n')).toBe(0);
    expect(cmp('1.5n', '2n')).toBe(0);
  });

  it('a huge exponent is compared without building the number, and a giant one refused', () => {
    expect(cmp('1e999999', '1e999998')).toBe(1);
    expect(() => parseQuantity(`1e${'9'.repeat(12)}`)).toThrow(QuantityError);
    expect(() => parseQuantity('1'.repeat(65))).toThrow(QuantityError);
  });
});
