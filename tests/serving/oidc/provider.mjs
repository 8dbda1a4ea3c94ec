// The OpenID Connect provider the sign-in tests start: node-oidc-provider (OpenID Certified), on loopback, over
// http (its development sign-in and consent pages; any password is accepted). Started by tests/oidc_provider.py:
//
//   node provider.mjs <port> <config.json>
//
// config.json: {"clients": [{client_id, client_secret, redirect_uris}], "accounts": {"<sub>": {
//   "preferred_username", "email", "groups": [...]}}, "wrong_audience": ["<sub>", ...]}
// The accounts file is read again at every sign-in, so a test changes a person's groups between sign-ins.
// An account named in "wrong_audience" gets ID tokens minted for another client ("another-app"): the token a
// relying party must refuse (a token substituted from another application).
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const [port, configPath] = process.argv.slice(2);
const read = () => JSON.parse(readFileSync(configPath, 'utf8'));
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: read().clients.map((c) => ({ ...c, grant_types: ['authorization_code'], response_types: ['code'] })),
  claims: { openid: ['sub'], profile: ['preferred_username'], email: ['email'], groups: ['groups'] },
  scopes: ['openid', 'profile', 'email', 'groups'],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, sub) {
    const account = read().accounts[sub];
    if (!account) return undefined;
    return { accountId: sub, async claims() { return { sub, ...account }; } };
  },
  cookies: { keys: ['studio-test-provider-cookie-key'] },
});

const issue = provider.IdToken.prototype.issue;
provider.IdToken.prototype.issue = async function issueMaybeForAnotherClient(options) {
  if (options?.use === 'idtoken' && (read().wrong_audience || []).includes(this.available.sub)) {
    const { client } = this;
    this.client = Object.create(client, { clientId: { value: 'another-app' } });
    try {
      return await issue.call(this, options);
    } finally {
      this.client = client;
    }
  }
  return issue.call(this, options);
};

provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`provider ready at ${issuer}`);
});
