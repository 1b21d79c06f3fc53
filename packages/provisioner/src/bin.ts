// `sbx-provisioner`: the provisioner service from the environment (and SBX_CONFIG, when set).
import { errorMessage } from '@sbx/core';
import { jsonLineLogger, serveProvisioner } from './provisioner-main.js';

const logger = jsonLineLogger(process.env.SBX_LOG_LEVEL);
try {
  const running = await serveProvisioner({
    env: process.env,
    configFile: process.env.SBX_CONFIG,
    logger,
  });
  const stop = (signal: string) => {
    logger.info('stopping', { signal });
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('close failed', { error: errorMessage(err) });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
} catch (err) {
  logger.error('provisioner failed to start', { error: errorMessage(err) });
  process.exit(1);
}
