// `sbx-provisioner`: the provisioner service from the environment (and SBX_CONFIG, when set).
import { runProvisionerProcess } from './provisioner-main.js';

await runProvisionerProcess();
