// Entry of the provisioner container image (tools/images/build-images.sh bundles it into one file):
// the executable's process, with the Kubernetes client bundled in instead of imported at run time.
import * as kubernetesClient from '@kubernetes/client-node';
import { runProvisionerProcess } from '@sbx/provisioner';

await runProvisionerProcess({
  importer: async (specifier) =>
    specifier === '@kubernetes/client-node' ? kubernetesClient : import(specifier),
});
