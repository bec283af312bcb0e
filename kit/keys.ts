// The API keys every test app, test worker and the edge bench share (the bench's Node server makes its own).
import type { ApiKey } from '../common/caller.js';

// 24+ characters each: the worker holds every key to the production length (common/config-fields.ts).
export const KEYS = {
  storefront: 'test_storefront_key_1_abcdef',
  storefront2: 'test_storefront_key_2_abcdef',
  partner: 'test_partner_key_1_abcdefghij',
  admin: 'test_admin_key_1_abcdefghijkl',
};
export const TEST_API_KEYS: ApiKey[] = [
  { role: 'storefront', key: KEYS.storefront },
  { role: 'storefront', key: KEYS.storefront2 },
  { role: 'partner', key: KEYS.partner },
  { role: 'admin', key: KEYS.admin },
];
