import { describeProcessContract, describeSandboxContract } from '@sbx/core/testing';
import { E2BSandbox } from './e2b-sandbox.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

describeSandboxContract('E2BSandbox over FakeE2BClient', async () => {
  const fake = new FakeE2BClient();
  const remote = await fake.create({ template: 'base', metadata: {} });
  await remote.commands.run('mkdir -p /home/user/workspace');
  const sandbox = new E2BSandbox(remote.sandboxId, remote);
  return { sandbox, workdir: '/mnt/user-data/workspace', cleanup: () => fake.dispose() };
});

describeProcessContract('E2BSandbox over FakeE2BClient', async () => {
  const fake = new FakeE2BClient();
  const remote = await fake.create({ template: 'base', metadata: {} });
  await remote.commands.run('mkdir -p /home/user/workspace');
  const sandbox = new E2BSandbox(remote.sandboxId, remote);
  return { sandbox, workdir: '/mnt/user-data/workspace', cleanup: () => fake.dispose() };
});
