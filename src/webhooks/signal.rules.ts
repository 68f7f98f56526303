// The dispatcher's wake-up flag.

/** A wake-up flag with a timeout: wake() before wait() is not lost; wait() tells whether it was woken (else it timed out). */
export class Signal {
  private woken = false;
  private resolve: ((woken: boolean) => void) | undefined;
  wake(): void {
    if (this.resolve) this.resolve(true);
    else this.woken = true;
  }
  /** Forgets a wake() that no wait() has seen yet (the caller has read the state it stood for). */
  clear(): void {
    this.woken = false;
  }
  wait(ms: number): Promise<boolean> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve(true);
    }
    return new Promise((res) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.resolve = undefined;
        res(woken);
      };
      const timer = setTimeout(() => done(false), ms);
      this.resolve = done;
    });
  }
}
