package iom.echo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import iom.ServerProcess;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The four echo servers of the Mina vs Netty chapter, as child processes, as the harness runs them. */
class EchoServersTest {
    static final int[] SIZES = {1024, 5120, 100 * 1024};
    static final int CONNECTIONS = 8, ROUNDS = 5;

    /** A server: its class, its classpath, and the start of the framework line in its statistics. */
    enum Echo {
        MINA_2_0_7("iom.echo.MinaEcho", "mina-core 2.0.7"),
        MINA_2_2("iom.echo.MinaEcho", "mina-core 2.2."),
        NETTY_3_6_2("iom.echo.Netty3Echo", "netty 3.6.2.Final"),
        NETTY_4_2("iom.echo.Netty4Echo", "netty-transport 4.2.");

        final String mainClass, framework;

        Echo(String mainClass, String framework) {
            this.mainClass = mainClass;
            this.framework = framework;
        }

        /** The tests' classpath; for Mina 2.0.7, that jar (copied by Maven) instead of mina-core 2.2. */
        String classpath() {
            if (this != MINA_2_0_7) {
                return ServerProcess.classpath();
            }
            Path jar = Path.of(System.getProperty("iom.mina207.jar", "target/lib-mina-2.0.7/mina-core-2.0.7.jar"));
            assertTrue(Files.isRegularFile(jar), jar + " is missing: Maven's copy-mina-2.0.7 puts it there");
            return jar + File.pathSeparator + Arrays.stream(ServerProcess.classpath().split(File.pathSeparator))
                    .filter(entry -> !Path.of(entry).getFileName().toString().startsWith("mina-core-"))
                    .collect(Collectors.joining(File.pathSeparator));
        }

        ServerProcess start(String... args) throws IOException {
            return new ServerProcess(classpath(), mainClass, List.of(args));
        }
    }

    /** Several connections at once echo 1 KiB, 5 KiB and 100 KiB byte-exact; the statistics add up. */
    @ParameterizedTest
    @EnumSource(Echo.class)
    void echoesAndCountsEveryRead(Echo echo, @TempDir Path dir) throws Exception {
        Path stats = dir.resolve("reads.csv");
        long bytes;
        try (ServerProcess server = echo.start("--stats", stats.toString(),
                "--io-threads", "2", "--executor-threads", "3")) {
            bytes = echoFromManyConnections(server);
        } // close(): SIGTERM, exit status 0; the statistics are written before the exit
        List<String> lines = Files.readAllLines(stats);
        assertTrue(lines.get(0).startsWith("# framework=" + echo.framework), lines.get(0));
        assertEquals("chunk_bytes,buffer_bytes,events", lines.get(1));
        long events = 0, chunkBytes = 0;
        for (String line : lines.subList(2, lines.size())) {
            long[] row = Arrays.stream(line.split(",")).mapToLong(Long::parseLong).toArray();
            assertTrue(row[0] > 0 && row[1] > 0 && row[2] > 0, line);
            events += row[2];
            chunkBytes += row[0] * row[2];
        }
        assertTrue(events >= (long) CONNECTIONS * ROUNDS * SIZES.length, events + " read events");
        assertEquals(bytes, chunkBytes, "bytes in the counted read events");

        List<String> series = Files.readAllLines(dir.resolve("reads.csv.series.csv"));
        assertEquals("t_us,conn,chunk_bytes,buffer_bytes", series.get(0));
        assertEquals(events, series.size() - 1, "one row per read event (fewer than " + ReadStats.SERIES + ")");
        Set<Long> conns = new HashSet<>();
        long seriesBytes = 0;
        for (String line : series.subList(1, series.size())) {
            long[] row = Arrays.stream(line.split(",")).mapToLong(Long::parseLong).toArray();
            assertTrue(row[0] >= 0, line);
            conns.add(row[1]);
            seriesBytes += row[2];
        }
        assertEquals(CONNECTIONS, conns.size(), "connections in the series");
        assertEquals(bytes, seriesBytes, "bytes in the series");
        try (var files = Files.list(dir)) {
            assertEquals(2, files.count(), "no temporary files left");
        }
    }

    /** Clients that reset in the middle of a message cost their own connection only. */
    @ParameterizedTest
    @EnumSource(Echo.class)
    void survivesResets(Echo echo) throws Exception {
        try (ServerProcess server = echo.start("--nodelay", "false")) {
            try (Socket s = server.connect()) {
                s.getOutputStream().write(new byte[3000]); // 3000 of 5120 bytes, then RST
                s.setSoLinger(true, 0);
            }
            try (Socket s = server.connect()) {
                s.getOutputStream().write(new byte[100 * 1024]);
                ServerProcess.readExactly(s, 1000); // the echo is under way: RST while the server writes
                s.setSoLinger(true, 0);
            }
            try (Socket s = server.connect()) {
                for (int size : SIZES) {
                    roundTrip(s, message(new Random(size), size));
                }
            }
        }
    }

    /** Mina's read buffer flags take effect: 4096 bytes at most per read, so a 5 KiB message takes two. */
    @ParameterizedTest
    @EnumSource(value = Echo.class, names = {"MINA_2_0_7", "MINA_2_2"})
    void minaReadBufferFlags(Echo echo, @TempDir Path dir) throws Exception {
        Path stats = dir.resolve("reads.csv");
        try (ServerProcess server = echo.start("--stats", stats.toString(), "--read-buffer", "4096",
                "--min-read-buffer", "4096", "--max-read-buffer", "4096",
                "--allocator", "cached", "--nodelay", "true")) {
            try (Socket s = server.connect()) {
                for (int i = 0; i < 20; i++) {
                    roundTrip(s, message(new Random(i), 5120));
                }
            }
        }
        List<String> rows = Files.readAllLines(stats);
        for (String row : rows.subList(2, rows.size())) {
            assertEquals("4096", row.split(",")[1], row);
        }
        try (ServerProcess server = echo.start("--allocator", "direct"); Socket s = server.connect()) {
            roundTrip(s, message(new Random(1), 5120));
        }
    }

    /** Bad flags: the usage or what a flag wants, exit 1; a port in use: "error: bind", exit 1. */
    @ParameterizedTest
    @EnumSource(Echo.class)
    void badFlagsAndSetupErrorsExit1(Echo echo) throws Exception {
        List<List<String>> bad = new ArrayList<>(List.of(List.of("--port", "x"), List.of("--bogus", "1"),
                List.of("--io-threads", "0"), List.of("--executor-threads", "-1"), List.of("--nodelay", "maybe"),
                List.of("--stats"), List.of("--stats", "/nonexistent/reads.csv")));
        if (echo.mainClass.endsWith("MinaEcho")) {
            bad.add(List.of("--allocator", "pooled"));
            bad.add(List.of("--read-buffer", "0"));
        } else {
            bad.add(List.of("--read-buffer", "4096")); // Mina's flags are Mina's only
        }
        for (List<String> args : bad) {
            String err = runToExit(echo, args);
            assertTrue(err.contains("usage: ") || err.contains(" wants "), args + " printed: " + err);
        }
        try (ServerProcess server = echo.start()) {
            String err = runToExit(echo, List.of("--port", Integer.toString(server.port)));
            assertTrue(err.startsWith("error: bind 127.0.0.1:" + server.port), err);
        }
    }

    /** In process: every event counted, the series stops at its first SERIES events, sorted rows. */
    @Test
    void statsKeepTheFirstEventsOneByOne(@TempDir Path dir) throws Exception {
        ReadStats stats = new ReadStats("test 1");
        int events = ReadStats.SERIES + 5000;
        for (int i = 0; i < events; i++) {
            stats.record(i % 3, i % 2 == 0 ? 5120 : 1024, 8192);
        }
        stats.save(dir.resolve("r.csv"));
        assertEquals(List.of("# framework=test 1", "chunk_bytes,buffer_bytes,events",
                        "1024,8192," + events / 2, "5120,8192," + (events - events / 2)),
                Files.readAllLines(dir.resolve("r.csv")));
        List<String> series = Files.readAllLines(dir.resolve("r.csv.series.csv"));
        assertEquals(ReadStats.SERIES + 1, series.size());
        assertTrue(series.get(2).endsWith(",1,1024,8192"), series.get(2));
    }

    /** Run the server with these flags, expect exit status 1 without a READY line; its stderr. */
    static String runToExit(Echo echo, List<String> args) throws Exception {
        List<String> command = new ArrayList<>(List.of(ServerProcess.java(), "-cp", echo.classpath(), echo.mainClass));
        command.addAll(args);
        Process p = new ProcessBuilder(command).start();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS), args + ": still running");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(1, p.exitValue(), args + ": exit status; stderr: " + err);
        assertEquals("", out, args + ": stdout");
        return err;
    }

    /** CONNECTIONS clients at once, each ROUNDS times every size; the bytes sent in all. */
    static long echoFromManyConnections(ServerProcess server) throws Exception {
        ExecutorService clients = Executors.newFixedThreadPool(CONNECTIONS);
        try {
            List<Future<Long>> sent = new ArrayList<>();
            for (int c = 0; c < CONNECTIONS; c++) {
                Random random = new Random(c);
                sent.add(clients.submit(() -> {
                    long n = 0;
                    try (Socket s = server.connect()) {
                        for (int r = 0; r < ROUNDS; r++) {
                            for (int size : SIZES) {
                                n += roundTrip(s, message(random, size));
                            }
                        }
                    }
                    return n;
                }));
            }
            long total = 0;
            for (Future<Long> f : sent) {
                total += f.get();
            }
            return total;
        } finally {
            clients.shutdownNow();
        }
    }

    static byte[] message(Random random, int size) {
        byte[] m = new byte[size];
        random.nextBytes(m);
        return m;
    }

    /** Send the message (from another thread: the echo flows back while it is sent) and read it back. */
    static int roundTrip(Socket s, byte[] message) throws Exception {
        Thread writer = Thread.ofVirtual().start(() -> {
            try {
                OutputStream out = s.getOutputStream();
                out.write(message);
                out.flush();
            } catch (IOException e) {
                throw new RuntimeException(e); // the read below then fails too
            }
        });
        byte[] back = ServerProcess.readExactly(s, message.length);
        writer.join();
        assertArrayEquals(message, back, message.length + "-byte message");
        return message.length;
    }
}
