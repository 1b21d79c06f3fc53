import type { Sandbox } from '@sbx/core';

export interface ProcessBenchRow {
  benchmark: string;
  sbx_ms: number;
  baseline: string;
  baseline_ms: number;
  ratio: number;
  note: string;
}

export function processRows(
  label: string,
  sandbox: Sandbox,
  options?: { calls?: number; firstOutputRuns?: number; megabytes?: number; shell?: string },
): Promise<ProcessBenchRow[]>;

export function processMarkdown(title: string, rows: ProcessBenchRow[], machine: string): string;
