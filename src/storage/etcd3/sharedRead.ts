// Consistent reads need etcd's revision as of *some moment after they arrived*: any linearizable call
// sent after a read arrived answers with a revision that covers every write acknowledged before it.
// So concurrent reads can share one call, as long as it was sent after each of them arrived: at most
// one call is in flight, and readers that arrive meanwhile wait for the next one, which they share.

export class SharedRead<T> {
  /** The call sent and not yet answered. */
  private inFlight: Promise<T> | undefined;
  /** The call to send once `inFlight` is answered, shared by every reader that arrived meanwhile. */
  private next: Promise<T> | undefined;

  constructor(private readonly send: () => Promise<T>) {}

  /** The answer of a call sent no earlier than now. */
  read(): Promise<T> {
    if (!this.inFlight) return this.start();
    if (!this.next) {
      const after = this.inFlight.then(ignore, ignore);
      this.next = after.then(() => {
        this.next = undefined;
        return this.start();
      });
    }
    return this.next;
  }

  private start(): Promise<T> {
    const call = this.send();
    this.inFlight = call;
    const clear = () => { if (this.inFlight === call) this.inFlight = undefined; };
    call.then(clear, clear);
    return call;
  }
}

function ignore(): void {}
