// What the back-office's routes work with: the same services the JSON account API calls (the rules live
// there), the one-time secrets, the CSRF tokens, and the per-key usage statistics to draw.
import type { Config } from '../config/types';
import type { AccountService } from '../accounts/accounts';
import type { ActivationCodes } from '../licensing/cloud/activation-codes';
import type { DeviceKeyService } from '../licensing/cloud/licence-device-keys';
import type { LicenceService } from '../licensing/cloud/licences';
import type { AsyncKeyUsageRepository } from '../storage/interfaces';
import type { CsrfTokens } from './csrf';
import type { OneTimeReveals } from './reveals';

export interface BackOfficeContext {
  config: Config;
  accounts: AccountService;
  licences: LicenceService;
  deviceKeys: DeviceKeyService;
  activationCodes: ActivationCodes;
  keyUsage: AsyncKeyUsageRepository;
  reveals: OneTimeReveals;
  csrf: CsrfTokens;
  now: () => Date;
}
