import java.io.IOException;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Amazon's DynamoDB Local, bound to 127.0.0.1 only, and tied to the process that started it.
 *
 * DynamoDB Local has no bind-address option: its DynamoDBProxyServer builds a Jetty Server(port),
 * which listens on every interface. This launcher builds the same server from the same
 * command-line arguments (ServerRunner.createServerFromCommandLineArgs), sets the host of its
 * Jetty connector to 127.0.0.1 before starting it, and exits when its standard input reaches
 * end-of-file: the pipe from the node process that spawned it closes when that process dies,
 * however it dies (SIGKILL included), so DynamoDB Local never outlives the runtime.
 *
 * Run with Java's single-file source launcher (no build step; Java 11+):
 *   java -Djava.library.path=<lib>/DynamoDBLocal_lib -cp <lib>/DynamoDBLocal.jar LoopbackDynamoDBLocal.java -port N ...
 */
public class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    int bound = 0;
    for (Connector connector : server.getConnectors()) {
      if (connector instanceof ServerConnector) {
        ((ServerConnector) connector).setHost("127.0.0.1");
        bound++;
      }
    }
    if (bound == 0) {
      System.err.println("LoopbackDynamoDBLocal: no Jetty connector to bind to 127.0.0.1; refusing to listen on every interface");
      System.exit(2);
    }

    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // Nothing is ever written; only the end of the pipe matters.
        }
      } catch (IOException ignored) {
        // A broken pipe is the parent gone, too.
      }
      System.err.println("LoopbackDynamoDBLocal: parent process gone (stdin closed); exiting");
      Runtime.getRuntime().halt(0);
    }, "parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();

    proxy.start();
    System.out.println("LoopbackDynamoDBLocal: listening on 127.0.0.1:" + ((ServerConnector) server.getConnectors()[0]).getLocalPort());
  }
}
