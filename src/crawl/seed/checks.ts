/** The checks every seed field is read through; a failure is a SeedError naming the field. */
import { WeirError } from '../../errors.js';
import { shown } from './text.js';

/** A seed file that cannot be used. `field` names the part that is wrong. */
export class SeedError extends WeirError {
  readonly field: string;
  constructor(field: string, message: string) {
    super('WEIR_SEED', field ? `seed field ${field}: ${message}` : `seed file: ${message}`);
    this.name = 'SeedError';
    this.field = field;
  }
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function int(field: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new SeedError(field, `must be a whole number from ${min} to ${max}, got ${shown(v)}`);
  }
  return v;
}

export function bool(field: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new SeedError(field, `must be true or false, got ${shown(v)}`);
  return v;
}

export const optional = <T>(v: unknown, fallback: T, check: (v: unknown) => T): T => (v === undefined ? fallback : check(v));
export const nullable = (v: unknown, check: (v: unknown) => number): number | null => (v === undefined || v === null ? null : check(v));
