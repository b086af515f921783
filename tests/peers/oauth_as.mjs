// A real OAuth 2 authorization server for the tests (npm `oauth2-mock-server`, installed
// into target/npm-peers by scripts/npm-peers.sh): RS256 keys generated at start, the
// authorization-code flow with PKCE, JWKS at /jwks. As a real server for MCP does, access
// tokens are audience-bound to the RFC 8707 `resource` the client asks for, and carry the
// scope granted at the authorization request (the mock alone would grant "dummy"). Prints
// `AS http://127.0.0.1:PORT` once listening; runs until killed.
//
// Usage: node oauth_as.mjs PATH/TO/oauth2-mock-server/dist/index.mjs

const [, , lib] = process.argv;
const { OAuth2Server, Events } = await import(lib);

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
await server.start(0, '127.0.0.1');
server.issuer.url = `http://127.0.0.1:${server.address().port}`;

// The scope asked for at /authorize, by the code issued (at most 1000 kept).
const granted = new Map();
server.service.on(Events.BeforeAuthorizeRedirect, ({ url }, req) => {
  const code = url.searchParams.get('code');
  const scope = new URL(req.url, server.issuer.url).searchParams.get('scope');
  if (code && scope) {
    granted.set(code, scope);
    if (granted.size > 1000) granted.delete(granted.keys().next().value);
  }
});

server.service.on(Events.BeforeTokenSigning, (token, req) => {
  const { resource, code } = req.body ?? {};
  if (typeof resource === 'string') {
    token.payload.aud = resource;
  }
  if (typeof code === 'string' && granted.has(code)) {
    token.payload.scope = granted.get(code);
    granted.delete(code);
  }
});

console.log(`AS ${server.issuer.url}`);
