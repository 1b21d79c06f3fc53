/**
 * The forwarder a confined sandbox with an egress gateway runs inside its namespace: it listens
 * on `127.0.0.1:<port>` of the namespace (where `HTTP_PROXY` points) and relays every connection,
 * byte for byte, to the gateway's unix socket bound at `<socket>`. Run by the gateway's own node
 * binary (`node -e SCRIPT <port> <socket>`), so the sandbox needs nothing installed.
 *
 * It is no privilege: the namespace has no route out, so the only place the forwarder (or anything
 * that takes it over) can reach is the socket every process of the sandbox can reach anyway, and
 * behind it the proxy decides every request by the sandbox's policy. It prints `ready` once it
 * listens (the namespace counts as started then) and exits on a listen error. Its connections are
 * bounded (`MAX`) because it runs outside the thread's cgroup (it starts with the init, before
 * the init is placed): past the bound a connection is closed at accept.
 */
export const EGRESS_FORWARDER_SCRIPT = [
  "'use strict';",
  "const net = require('net');",
  'const [port, socketPath] = process.argv.slice(1);',
  'const MAX = 256;',
  'let open = 0;',
  'const server = net.createServer({ noDelay: true }, (client) => {',
  '  if (open >= MAX) { client.destroy(); return; }',
  '  open += 1;',
  '  const upstream = net.connect(socketPath);',
  // The proxy's own timeouts close an idle upstream; its end ends the client after what is queued.
  "  client.once('close', () => { open -= 1; upstream.destroy(); });",
  "  upstream.once('close', () => client.end());",
  "  client.on('error', () => client.destroy());",
  "  upstream.on('error', () => { upstream.destroy(); client.destroy(); });",
  '  client.pipe(upstream); upstream.pipe(client);',
  '});',
  "server.on('error', (error) => { process.stderr.write(`egress forwarder: ${error.message}\\n`); process.exit(1); });",
  "server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\\n'));",
].join('\n');
