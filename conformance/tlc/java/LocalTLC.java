// tlc2.TLC for a run on this machine alone: every RMI server socket is a stand-in that listens
// on no port. TLC 2.15's fingerprint set is an RMI remote object (for distributed TLC), so each
// run of the stock main listens on an ephemeral TCP port on every interface, and an accept()
// waits on it in native code; at System.exit the JVM then waits 300 ms for that thread
// (HotSpot's VM_Exit waits up to 30 x 10 ms for threads in native). A one-trace run took
// 0.55 s here with this main, 0.9 s without. Nothing of leaseproof's uses distributed TLC.
// Client sockets are refused: a local run has nothing to connect to.

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.rmi.server.RMISocketFactory;

public final class LocalTLC {
    private LocalTLC() {}

    /** Accepts nothing, ever: accept() waits in Java (not in native code) until close(). */
    static final class NoListener extends ServerSocket {
        private boolean closed;

        NoListener() throws IOException {
            super();  // unbound: no port is taken
        }

        @Override
        public synchronized Socket accept() throws IOException {
            while (!closed) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SocketException("interrupted");
                }
            }
            throw new SocketException("closed");
        }

        @Override
        public synchronized void close() {
            closed = true;
            notifyAll();
        }

        @Override
        public synchronized boolean isClosed() {
            return closed;
        }

        // RMI records the port an anonymous export got; no client ever connects to it.
        @Override
        public int getLocalPort() {
            return 1;
        }
    }

    static final class NoNetwork extends RMISocketFactory {
        @Override
        public ServerSocket createServerSocket(int port) throws IOException {
            return new NoListener();
        }

        @Override
        public Socket createSocket(String host, int port) throws IOException {
            throw new SocketException("leaseproof's LocalTLC makes no RMI connections (to " + host + ":" + port + ")");
        }
    }

    public static void main(String[] args) throws Exception {
        // RMI would look up this machine's name for its endpoint: slow where DNS is.
        System.setProperty("java.rmi.server.hostname", "127.0.0.1");
        RMISocketFactory.setSocketFactory(new NoNetwork());
        tlc2.TLC.main(args);
    }
}
