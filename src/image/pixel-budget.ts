// How many decoded pixels the service holds at once. Each request image is decoded to 3 bytes per pixel and
// kept until the engine has analysed it, so without a bound, memory grows with concurrency times
// [image] max_pixels (64 analyses of 50-megapixel images would be 9.6 GB). An image is admitted only while
// the pixels in flight stay within [image] max_pixels_in_flight; otherwise the request is refused at once
// (503 with Retry-After) rather than queued.

export interface PixelLease {
  /** Returns the pixels to the budget; later calls do nothing. */
  release(): void;
}

export class PixelBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Pixels currently admitted. */
  get inFlight(): number {
    return this.used;
  }

  /**
   * Admits `pixels` or answers undefined. An image alone is always admitted when nothing else is in flight,
   * so a limit below one image's size cannot starve the service.
   */
  tryAdmit(pixels: number): PixelLease | undefined {
    if (this.used > 0 && this.used + pixels > this.limit) return undefined;
    this.used += pixels;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.used -= pixels;
      },
    };
  }
}

/** The budget is spent: the service is busy with large images, try again shortly. */
export class PixelBudgetError extends Error {
  constructor(readonly field: string, readonly pixels: number, readonly budget: PixelBudget) {
    super(`${field}: ${pixels} pixels would exceed [image] max_pixels_in_flight=${budget.limit} (${budget.inFlight} in flight)`);
    this.name = 'PixelBudgetError';
  }
}
