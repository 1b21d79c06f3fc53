import { describe, expect, it } from 'vitest';
import { parseSandboxConfig } from '../config/config-loader.js';
import { resolveToolConfig, toolConfigFromSandboxConfig } from './tool-config.js';

describe('tool configuration', () => {
  it('defaults: 20000 / 50000 / 20000 chars, 600 s, host bash off, read-before-write on', () => {
    expect(resolveToolConfig()).toEqual({
      bashOutputMaxChars: 20_000,
      readFileOutputMaxChars: 50_000,
      lsOutputMaxChars: 20_000,
      bashCommandTimeoutSeconds: 600,
      allowHostBash: false,
      readBeforeWrite: { enabled: true },
      globMaxResults: undefined,
      grepMaxResults: undefined,
      writeFileMaxBytes: undefined,
      processTools: false,
    });
  });

  it('reads the tool settings of a loaded sandbox section', () => {
    const config = parseSandboxConfig(
      {
        sandbox: {
          use: '@sbx/local',
          allow_host_bash: true,
          bash_output_max_chars: 10,
          read_file_output_max_chars: 20,
          ls_output_max_chars: 30,
          bash_command_timeout: 40,
          read_before_write: { enabled: false },
          tools: { glob: { max_results: 50 }, grep: { max_results: 60 } },
        },
      },
      { env: {}, cwd: '/srv/app' },
    );
    expect(resolveToolConfig(toolConfigFromSandboxConfig(config))).toEqual({
      bashOutputMaxChars: 10,
      readFileOutputMaxChars: 20,
      lsOutputMaxChars: 30,
      bashCommandTimeoutSeconds: 40,
      allowHostBash: true,
      readBeforeWrite: { enabled: false },
      globMaxResults: 50,
      grepMaxResults: 60,
      writeFileMaxBytes: undefined,
      processTools: false,
    });
  });
});
