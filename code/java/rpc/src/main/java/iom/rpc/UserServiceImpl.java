package iom.rpc;

import iom.common.Options;
import iom.common.Work;

/**
 * The service's one implementation, the same in every provider. With --work-ms it first sleeps
 * (blocking, like a database call) and with --spin-us it burns CPU, as every server of the book
 * does for the contract's simulated work (iom.common.Work): where that runs, a Tomcat thread, a
 * virtual thread, a WebFlux worker or a Netty business thread, is what the providers differ in.
 */
public final class UserServiceImpl implements UserService {
    private final Options opts;

    public UserServiceImpl(Options opts) {
        this.opts = opts;
    }

    @Override
    public User findById(int id) {
        try {
            Work.simulate(opts);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // only on shutdown: answer anyway
        }
        return new User(id, "user-" + id);
    }
}
