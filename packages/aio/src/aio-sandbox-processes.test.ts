import { describeProcessContract } from '@sbx/core/testing';
import { AioSandbox } from './aio-sandbox.js';
import { startStandin } from './aio-standin.fixture.js';

// The process contract over HTTP against the stand-in server in this process: plain commands on
// the shell session, streamed ones and background processes on the async bash API. The same suite
// runs against the stand-in image in a real container in `aio-sandbox.int.test.ts`.
describeProcessContract('AioSandbox (stand-in server in process)', async () => {
  const standin = await startStandin();
  const sandbox = new AioSandbox('aio-process', { baseUrl: standin.url, homeDir: standin.home });
  const workdir = `${standin.home}/work`;
  await sandbox.executeCommand(`mkdir -p ${workdir}`);
  return {
    sandbox,
    workdir,
    cleanup: async () => {
      await sandbox.close();
      await standin.close();
    },
  };
});
